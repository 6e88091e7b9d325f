# dockctl — build, test and demo. Everything here runs on a machine with Go
# (and the modules of go.sum, from the module proxy or a copied module
# cache) and a Docker Engine and nothing else: images are built FROM scratch
# from static binaries, so no registry is ever contacted.

GO             ?= go
VERSION        ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The commit `dockctl version` prints (12 hex, -dirty for a modified tree).
COMMIT         ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git rev-parse --git-dir >/dev/null 2>&1 && { git diff --quiet HEAD 2>/dev/null || echo -dirty; })
LDFLAGS        := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
# grpcnotrace: the test workload's gRPC server without golang.org/x/net/trace
# (html/template and friends); dockctl links no gRPC (internal/grpcprobe).
GOTAGS         ?= grpcnotrace
BUILD          := $(CURDIR)/build
IMAGE          ?= dockctl:dev
WORKLOAD_IMAGE ?= dockctl-workload:dev
DEMO_INSTANCE  ?= demo
DEMO_STATE     ?= $(BUILD)/demo-state
# The controller container `dockctl install` names after the instance.
DEMO_CONTAINER := dockctl-$(DEMO_INSTANCE)-controller
# The demo's Services are published on this host address (the controller's
# --service-address); web.yaml's LoadBalancer Service on port 8080.
DEMO_ADDRESS   ?= 127.0.0.1
DEMO_URL       := http://$(DEMO_ADDRESS):8080/
DEMO_CLI       := $(BUILD)/bin/dockctl --instance $(DEMO_INSTANCE) --state-dir $(DEMO_STATE)
# FETCH prints a URL's body (also of an error status): with curl, else
# wget. The demo waits for its web Service's own answer, so that another
# process on the port is not taken for it.
CURL           := $(shell command -v curl 2>/dev/null)
FETCH          := $(if $(CURL),curl -sS --max-time 5,wget -qO- --content-on-error -T 5)
E2E_TIMEOUT    ?= 20m
# How many of the e2e tests marked independent (e2e/harness_test.go) run
# at once; 1 runs every test alone.
E2E_PARALLEL   ?= 4

export CGO_ENABLED = 0

.PHONY: all build test unit fuzz e2e vet image workload-image demo demo-down clean release demo-announce

all: build

## build: the dockctl binary in build/bin/dockctl
build:
	$(GO) build -trimpath -tags '$(GOTAGS)' -ldflags '$(LDFLAGS)' -o $(BUILD)/bin/dockctl ./cmd/dockctl

## release: static binaries for linux/amd64 and linux/arm64 in build/release/ (dockctl-VERSION-linux-ARCH), with SHA256SUMS; version and commit stamped
# Not part of `make test`. CGO_ENABLED=0 (exported above): the binary is
# also the image of the controller and of the helpers, FROM scratch.
RELEASE_ARCHES ?= amd64 arm64
release:
	rm -rf $(BUILD)/release
	mkdir -p $(BUILD)/release
	@for arch in $(RELEASE_ARCHES); do \
	  echo "building dockctl $(VERSION) (commit $(COMMIT)) for linux/$$arch"; \
	  GOOS=linux GOARCH=$$arch $(GO) build -trimpath -tags '$(GOTAGS)' -ldflags '$(LDFLAGS)' \
	    -o $(BUILD)/release/dockctl-$(VERSION)-linux-$$arch ./cmd/dockctl || exit 1; \
	done
	cd $(BUILD)/release && sha256sum dockctl-$(VERSION)-linux-* > SHA256SUMS
	@ls -l $(BUILD)/release; cat $(BUILD)/release/SHA256SUMS

## test: every test — vet, unit (with -race), 15 s of manifest fuzzing, end-to-end against the local Docker daemon
test: vet unit fuzz e2e

FUZZ_TIME ?= 15s

## fuzz: fuzz manifest decoding (seed corpus in manifests/testdata/fuzz)
fuzz:
	CGO_ENABLED=1 $(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZ_TIME) ./manifests/

## unit: unit tests with the race detector (no Docker needed)
unit:
	CGO_ENABLED=1 $(GO) test -race -count=1 ./...

## e2e: end-to-end tests against the real Docker daemon (builds its own images)
e2e:
	CGO_ENABLED=1 $(GO) test -race -count=1 -p 1 -parallel $(E2E_PARALLEL) -tags e2e -timeout $(E2E_TIMEOUT) ./dockerx/ ./e2e/

## vet: gofmt and go vet, including the e2e build tag
vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./...

## image: the controller image (FROM scratch, static binary)
image:
	mkdir -p $(BUILD)/image
	$(GO) build -trimpath -tags '$(GOTAGS)' -ldflags '$(LDFLAGS)' -o $(BUILD)/image/dockctl ./cmd/dockctl
	docker build -q -t $(IMAGE) -f Dockerfile $(BUILD)/image

## workload-image: the tiny HTTP workload used by the examples and tests
workload-image:
	mkdir -p $(BUILD)/workload
	$(GO) build -trimpath -tags '$(GOTAGS)' -ldflags '-s -w' -o $(BUILD)/workload/workload ./cmd/workload
	docker build -q -t $(WORKLOAD_IMAGE) -f cmd/workload/Dockerfile $(BUILD)/workload

## demo: build dockctl and the test workload, `dockctl install` the controller, apply manifests/examples/ (a two-tier app published on 127.0.0.1:8080)
# `dockctl install` runs the controller as a container of the binary just
# built (docs/design.md §15), as the invoking user (with the Docker
# socket's group), so the state directory stays that user's: the CLI and
# `make clean` work on it without root. It needs the socket and the state
# directory and nothing else: no network, no published port (the web
# Service is published by a proxy container, on --service-address), no
# capability, no other writable path. The Service's proxy takes the endpoints once the
# replicas are ready, so the demo waits for the first 200 of the published
# port (web answers 502 while api has no ready endpoint).
demo: demo-announce build workload-image
	install -d -m 0700 $(DEMO_STATE)
	$(MAKE) --no-print-directory demo-controller-rm
	$(DEMO_CLI) install -- --resync-period 10s --service-address $(DEMO_ADDRESS)
	$(DEMO_CLI) apply -f manifests/examples/
	$(DEMO_CLI) rollout status deployment/api --timeout 2m
	$(DEMO_CLI) rollout status deployment/web --timeout 2m
	$(DEMO_CLI) rollout status deployment/web-sidecar --timeout 2m
	$(DEMO_CLI) get deployments
	$(DEMO_CLI) get services
	@for i in $$(seq 60); do \
	  if $(FETCH) $(DEMO_URL) 2>/dev/null | grep -q 'hello from web'; then break; fi; \
	  if [ $$i = 60 ]; then echo "$(DEMO_URL) did not answer as the demo's web Service within 60 s (another process on that port? see: $(DEMO_CLI) describe service web; the demo keeps running until make demo-down):"; $(FETCH) $(DEMO_URL); exit 1; fi; \
	  sleep 1; \
	done; \
	echo; echo "The web Service answers on $(DEMO_URL) (a new connection per request: any replica may answer):"; \
	for i in 1 2 3; do echo; echo "\$$ curl -s $(DEMO_URL)"; $(FETCH) $(DEMO_URL); done
	@echo
	@echo "The demo is running under instance '$(DEMO_INSTANCE)'. Try:"
	@echo "  export DOCKCTL_INSTANCE=$(DEMO_INSTANCE) DOCKCTL_STATE_DIR=$(DEMO_STATE) PATH=$(BUILD)/bin:\$$PATH"
	@echo "  dockctl get endpoints                    # the ready replicas behind each Service"
	@echo "  dockctl get pods -w                      # rows as they change (Ctrl-C ends it), during:"
	@echo "  while sleep 0.2; do curl -s $(DEMO_URL) | tail -1; done    # in another terminal, during:"
	@echo "  dockctl rollout restart deployment/api; dockctl rollout status deployment/api"
	@echo "  dockctl scale deployment web --replicas 5"
	@echo "  docker rm -f \$$(docker ps -q --filter label=io.dockctl.instance=$(DEMO_INSTANCE) --filter label=io.dockctl.deployment=web | head -1); sleep 1; dockctl get pods"
	@echo "  dockctl logs deployment/web --tail 3"
	@echo "  dockctl delete \$$(dockctl get pods -l app=web -o name | head -1)   # replaced, as a ReplicaSet replaces it"
	@echo "  dockctl top pods; dockctl port-forward deploy/api 18081:8080   # then: curl -s 127.0.0.1:18081/"
	@echo "  docker logs -f $(DEMO_CONTAINER)"
	@echo "  make demo-down    # removes the demo's controller, containers (proxies, DNS and the publisher included), pod volumes, network and helper images; keeps its state"
	@echo "  make clean        # demo-down, then removes build/ (state included) and the demo images"

## demo-down: remove the demo's controller, containers, pod volumes, network and images (`dockctl uninstall`: by its instance label); keeps its state directory
demo-down: demo-controller-rm
	-@if [ -x $(BUILD)/bin/dockctl ]; then $(DEMO_CLI) uninstall; fi

# demo-announce: what the demo compiles, before it does.
demo-announce:
	@echo "make demo: compiling dockctl (./cmd/dockctl) and the test workload (./cmd/workload), static, into build/,"
	@echo "then a FROM scratch image of the workload. The first build compiles every dependency (Kubernetes' API"
	@echo "types, the Docker client, gRPC): 6-7 minutes on 2 cores; later builds take seconds."

# demo-controller-rm: a controller container of an earlier `make demo`
# (docker run, label io.dockctl.demo=controller), if there is one.
.PHONY: demo-controller-rm
demo-controller-rm:
	-@ids=$$(docker ps -aq --filter 'name=^$(DEMO_CONTAINER)$$' --filter label=io.dockctl.demo=controller); \
	  if [ -n "$$ids" ]; then docker rm -f $$ids >/dev/null; fi

## clean: demo-down, then remove build outputs (the demo state included) and the demo images
clean: demo-down
	rm -rf $(BUILD)
	-for img in $(IMAGE) $(WORKLOAD_IMAGE); do \
	  if docker image inspect $$img >/dev/null 2>&1; then docker image rm $$img >/dev/null; fi; \
	done

## bench: dockctl vs the Docker API and Swarm, side by side (BENCH_QUICK=1: about 3–4 min, no Swarm, no cold recovery; BENCH_SWARM=1; BENCH_RECOVERY=1; BENCH_JSON=PATH; BENCH_BASELINE=REV: also dockctl of that git revision, after/before ratios; BENCH_GUARD=0: print the regression guard's verdicts without failing; BENCH_SCALE_PODS=N: the scale-big section's pods); see BENCHMARKS.md
# The harness leaves any swarm it initialised itself (deferred, and on
# signals); the shell trap covers a harness killed outright: the marker file
# exists only while the harness owns a swarm. Exit status 3 of the harness
# is the regression guard's alone (every section ran, a ratio drifted more
# than 10 % past its goal): the Go benchmarks still run, then make fails.
.PHONY: bench
bench:
	@echo "command: make bench BENCH_QUICK=$(BENCH_QUICK) BENCH_SWARM=$(BENCH_SWARM) BENCH_RECOVERY=$(BENCH_RECOVERY) BENCH_JSON=$(BENCH_JSON) BENCH_BASELINE=$(BENCH_BASELINE) BENCH_GUARD=$(BENCH_GUARD) BENCH_SECTIONS=$(BENCH_SECTIONS) BENCH_SCALE_PODS=$(BENCH_SCALE_PODS)"
	@echo "machine: nproc $$(nproc), $$(docker version -f 'Docker client {{.Client.Version}}, Engine {{.Server.Version}} (API {{.Server.APIVersion}})')"
	@mkdir -p $(BUILD)/bench
	$(GO) build -o $(BUILD)/bench/dockbench ./bench/cmd/dockbench
	@marker=$(BUILD)/bench/swarm-owned; \
	leave() { if [ -f $$marker ]; then echo "bench: leaving the swarm the harness initialised"; \
	  docker swarm leave --force; \
	  if grep -q 'gwbridge_existed=false' $$marker; then docker network rm docker_gwbridge; fi; \
	  rm -f $$marker; fi; }; \
	trap leave EXIT INT TERM; \
	status=0; \
	BENCH_QUICK=$(BENCH_QUICK) BENCH_SWARM=$(BENCH_SWARM) BENCH_RECOVERY=$(BENCH_RECOVERY) BENCH_JSON=$(BENCH_JSON) BENCH_GUARD=$(BENCH_GUARD) BENCH_SCALE_PODS=$(BENCH_SCALE_PODS) \
	  $(BUILD)/bench/dockbench -swarm-marker $$marker $(if $(BENCH_BASELINE),-baseline '$(BENCH_BASELINE)') || status=$$?; \
	if [ $$status -ne 0 ] && [ $$status -ne 3 ]; then exit $$status; fi; \
	leave; \
	$(GO) test -run '^$$' -bench . -benchmem $(if $(filter 1,$(BENCH_QUICK)),-benchtime 100ms) ./bench/... || exit $$?; \
	$(GO) test -run '^$$' -bench '^BenchmarkGetPods1000$$' -benchmem $(if $(filter 1,$(BENCH_QUICK)),-benchtime 5x) ./cmd/dockctl/ || exit $$?; \
	if [ $$status -eq 3 ]; then echo "bench: the regression guard failed (see GUARD above; BENCH_GUARD=0 reports without failing)"; fi; \
	exit $$status

## recovery: cold recovery after a Docker daemon restart without live-restore, dockctl's pods and Services against Docker's own restart policy and network aliases (a private dockerd; RECOVERY_BENCH=pods=30_services=3 for the small size alone)
RECOVERY_BENCH ?=
.PHONY: recovery
recovery:
	CGO_ENABLED=1 $(GO) test -count=1 -p 1 -tags e2e -run '^$$' -bench '^BenchmarkColdRecovery$$$(if $(RECOVERY_BENCH),/$(RECOVERY_BENCH)$$)' -benchtime 1x -timeout 30m ./e2e/

## chaos: the chaos run alone — random disruptions for CHAOS_DURATION (default 2m), then exact convergence; CHAOS_SEED=N replays a run (its seed is printed first)
CHAOS_DURATION ?= 2m
CHAOS_SEED     ?=
.PHONY: chaos
chaos:
	CHAOS_DURATION=$(CHAOS_DURATION) CHAOS_SEED=$(CHAOS_SEED) CGO_ENABLED=1 $(GO) test -race -count=1 -p 1 -tags e2e -run '^TestChaos$$' -v -timeout 15m ./e2e/
