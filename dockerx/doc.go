// Package dockerx is dockctl's only door to the Docker Engine.
//
// Invariants:
//
//   - This is the ONLY package of the product that imports the Docker SDK
//     (github.com/docker/docker). Everything it exposes is made of plain Go
//     types (Container, ContainerDetails, ContainerStats, Event, CreateRequest) and the
//     sentinel errors ErrNotFound, ErrConflict, ErrUnreachable and
//     ErrImagePull, so that callers and their in-memory fakes never depend on
//     the SDK.
//   - Every call to the daemon runs under its own deadline (WithTimeout,
//     30s by default; image pulls use WithPullTimeout, a stop is allowed
//     its grace period on top, an exec its probe timeout). A hung daemon
//     therefore stalls one operation, never the controller.
//   - On an Engine whose libnetwork deadlocks when two containers of one
//     network leave it at once (before 20.10.27, leavegate.go), stops and
//     forced removals pass one at a time in the order they came, each
//     until Docker has handled the exit or for at most 2 s; on newer
//     Engines they run in parallel. A gated call's deadline starts at its
//     turn, and a caller whose context ends while it waits leaves unsent.
//   - Every error that means "no such object", "name already in use" or "the
//     daemon cannot be reached" satisfies errors.Is with ErrNotFound,
//     ErrConflict or ErrUnreachable respectively, and carries the operation
//     and object in its message.
//   - BuildConfig is pure: the same CreateRequest always yields the same
//     Docker configuration (it is golden-tested), so a container's config is a
//     function of its template (hash) and of the controller's conversion
//     settings (log rotation, CreateRequest.Logs), which are deliberately not
//     part of the hash: a new setting reaches a replica when it is next
//     created.
//   - Replicas are created with restart policy "no": dockctl restarts them
//     itself, and Docker's own restart loop would race it. Helper
//     containers (BuildHelperConfig: Service proxies, the DNS server) are
//     the exception, "always": they must keep serving while the
//     controller is down.
//   - dockctl only touches containers that carry its io.dockctl.instance
//     label; ListContainers and Events filter on it server-side.
//   - Volumes and images follow the same ownership. CreateVolume never
//     adopts an existing volume whose labels are not the instance's and the
//     pod's (Docker hands back any volume of the requested name). The holder
//     image is generated (BuildHolderImage is pure: the same instance and
//     architecture give the same bytes and image ID) and loaded, never
//     pulled or built, under a tag naming its content, so nothing is left
//     dangling. The Service helpers' image (EnsureHelperImage) is made the
//     same way from dockctl's own executable, which must be a static ELF
//     of the daemon's architecture; its archive (and the controller
//     image's) is streamed from the executable's file, never held in
//     memory, and is byte for byte the archive BuildHelperImage makes of
//     the same bytes. RemoveVolume and RemoveImage never
//     force: what a container uses stays, with an error wrapping
//     ErrConflict.
//   - Networks too: EnsureNetwork never adopts a network of the instance
//     network's name that does not carry the instance's labels, and
//     RemoveNetwork removes only a network dockctl made, never one a
//     running container uses. The instance network (docs/design.md §10) is
//     a create-time setting of a pod's network owner (CreateRequest.Network),
//     outside the template hash; the dockctl.io/network annotation's
//     network is then joined after the create (ExtraNetworks), since API
//     1.41 attaches one network at create.
//   - CreateContainer, BuildConfig and VolumeLabels set the namespace
//     label (LabelNamespace) only when asked (CreateRequest.Namespace,
//     VolumeRequest.Namespace); reading, its absence is the default
//     namespace, as on objects of earlier releases.
//   - The controller container (install.go, docs/design.md §16) is
//     created from ControllerConfig, which is pure and golden-tested; its
//     image is the helpers' layer, loaded as theirs. EnsureController
//     touches only the container named ControllerName that carries the
//     instance's label and role controller, and replaces it only when its
//     configuration hash differs. ListInstanceObjects returns only objects
//     labelled with the instance, checked again after the daemon's filter,
//     and of those neither an image tagged outside dockctl's repositories
//     for the instance nor a container whose role is an image's (labels
//     inherited from a dockctl image): uninstall never reaches anything
//     else. ControllerConfig refuses two mounts at one path, which Docker
//     would refuse only after the running controller was removed.
//
// It must work against Engine API 1.41 (Docker 20.10) and newer, so the
// client negotiates the API version and uses no field newer than 1.41.
package dockerx
