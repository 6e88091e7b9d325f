# dockctl — build, test and demo. Everything here runs on a machine with Go
# and a Docker Engine and nothing else: images are built FROM scratch from
# static binaries, so no registry is ever contacted.

GO             ?= go
VERSION        ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS        := -s -w -X main.version=$(VERSION)
BUILD          := $(CURDIR)/build
IMAGE          ?= dockctl:dev
WORKLOAD_IMAGE ?= dockctl-workload:dev
DEMO_INSTANCE  ?= demo
DEMO_STATE     ?= $(BUILD)/demo-state
DEMO_CONTAINER ?= dockctl-demo-controller
E2E_TIMEOUT    ?= 20m

export CGO_ENABLED = 0

.PHONY: all build test unit e2e vet image workload-image demo demo-down clean

all: build

## build: the dockctl binary in build/bin/dockctl
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BUILD)/bin/dockctl ./cmd/dockctl

## test: every test — vet, unit (with -race) and end-to-end against the local Docker daemon
test: vet unit e2e

## unit: unit tests with the race detector (no Docker needed)
unit:
	CGO_ENABLED=1 $(GO) test -race -count=1 ./...

## e2e: end-to-end tests against the real Docker daemon (builds its own images)
e2e:
	CGO_ENABLED=1 $(GO) test -race -count=1 -p 1 -tags e2e -timeout $(E2E_TIMEOUT) ./dockerx/ ./e2e/

## vet: gofmt and go vet, including the e2e build tag
vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./...

## image: the controller image (FROM scratch, static binary)
image:
	mkdir -p $(BUILD)/image
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BUILD)/image/dockctl ./cmd/dockctl
	docker build -q -t $(IMAGE) -f Dockerfile $(BUILD)/image

## workload-image: the tiny HTTP workload used by the examples and tests
workload-image:
	mkdir -p $(BUILD)/workload
	$(GO) build -trimpath -ldflags '-s -w' -o $(BUILD)/workload/workload ./cmd/workload
	docker build -q -t $(WORKLOAD_IMAGE) -f cmd/workload/Dockerfile $(BUILD)/workload

## demo: build the images, run the controller as a container, apply manifests/examples/
demo: build image workload-image
	mkdir -p $(DEMO_STATE)
	-docker rm -f $(DEMO_CONTAINER) >/dev/null 2>&1
	docker run -d --name $(DEMO_CONTAINER) --restart unless-stopped \
	  --label io.dockctl.demo=controller \
	  -v /var/run/docker.sock:/var/run/docker.sock \
	  -v $(DEMO_STATE):/state \
	  -e DOCKCTL_INSTANCE=$(DEMO_INSTANCE) \
	  $(IMAGE) controller --resync-period 10s
	$(BUILD)/bin/dockctl --instance $(DEMO_INSTANCE) --state-dir $(DEMO_STATE) apply -f manifests/examples/ --wait --timeout 2m
	$(BUILD)/bin/dockctl --instance $(DEMO_INSTANCE) --state-dir $(DEMO_STATE) get deployments
	$(BUILD)/bin/dockctl --instance $(DEMO_INSTANCE) --state-dir $(DEMO_STATE) get containers -o wide
	@echo
	@echo "The demo is running under instance '$(DEMO_INSTANCE)'. Try:"
	@echo "  alias dockctl='$(BUILD)/bin/dockctl --instance $(DEMO_INSTANCE) --state-dir $(DEMO_STATE)'"
	@echo "  docker rm -f \$$(docker ps -q --filter label=io.dockctl.deployment=web | head -1); sleep 1; dockctl get containers"
	@echo "  dockctl scale deployment web --replicas 5"
	@echo "  docker logs -f $(DEMO_CONTAINER)"
	@echo "  make clean    # removes the demo's controller and containers"

## demo-down: stop the demo controller and remove the demo's containers (by label)
demo-down:
	-docker rm -f $(DEMO_CONTAINER) >/dev/null 2>&1
	-ids=$$(docker ps -aq --filter label=io.dockctl.instance=$(DEMO_INSTANCE)); \
	  if [ -n "$$ids" ]; then docker rm -f $$ids >/dev/null; fi

## clean: demo-down, then remove build outputs
clean: demo-down
	rm -rf $(BUILD)
