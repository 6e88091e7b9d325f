# The dockctl controller image. The build context is build/image, which holds
# only the static binary:
#   CGO_ENABLED=0 go build -tags grpcnotrace -o build/image/dockctl ./cmd/dockctl
#   docker build -f Dockerfile build/image
# Run it with /var/run/docker.sock and a state directory mounted at /state.
FROM scratch
COPY dockctl /dockctl
ENV DOCKCTL_STATE_DIR=/state
VOLUME /state
ENTRYPOINT ["/dockctl"]
CMD ["controller"]
