// Package compose converts a Compose project into the manifests dockctl
// applies: one Deployment (or Pod) per service, its Services, a ConfigMap
// of its environment, a Secret per Compose secret and a
// PersistentVolumeClaim per named volume (docs/user-guide.md, "From
// Compose"). The Compose files are read by compose-go, Compose's own
// loader, so interpolation, .env files, profiles, extends, merges of
// several files and the specification's defaults are exactly Compose's.
//
// Invariants:
//
//   - Deterministic: the same files and environment give the same objects
//     in the same order, byte for byte: services, volumes and secrets are
//     visited in name order, and the objects come in manifests.Order's
//     kind order (the Namespace, ConfigMaps, Secrets, claims, Services, then workloads),
//     each kind in name order.
//   - Nothing is dropped silently: every key of a service that is not
//     converted, or converted with a different meaning, is a Warning
//     naming the service and the key; so is every setting the controller's
//     privilege gates refuse without a flag (manifests.Privileges: host
//     paths, capabilities, host network), with that flag.
//   - Names are DNS-1123: each object's name is the Compose name in lower
//     case with every other character turned into '-'; a name that had to
//     change is a Warning, since other services may reach it by the old one.
//   - The objects are dockctl's own manifest types, so that what Convert
//     returns is what `dockctl apply -f` accepts (the package's tests decode
//     every golden output with manifests.Decode).
//   - Pure but for reading: the Compose files, env files, secret and
//     config files are read; nothing is written, nothing asked of Docker.
//     Interpolation sees the environment Options.Environ gives (compose-go
//     itself still reads COMPOSE_DISABLE_ENV_FILE from the process).
package compose
