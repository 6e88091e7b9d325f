package archtest

// m is a pattern of the module: m("store") is Module+"/store".
func m(path string) string { return Module + "/" + path }

// Rules are dockctl's architecture rules (see the package doc).
var Rules = []Rule{
	{
		// The model is shared by every layer; whatever it imported, every
		// layer would import.
		Name:   "manifests imports no package of the module but internal helpers",
		From:   []string{m("manifests/...")},
		Forbid: []string{m("...")},
		Allow:  []string{m("internal/...")},
	},
	{
		Name:   "store reaches no controller, Docker client or command",
		From:   []string{m("store/...")},
		Forbid: []string{m("reconciler/..."), m("dockerx/..."), m("cmd/...")},
	},
	{
		Name:   "dockerx reaches no store or controller",
		From:   []string{m("dockerx/...")},
		Forbid: []string{m("store/..."), m("reconciler/...")},
	},
	{
		Name:   "nothing imports cmd/...",
		From:   []string{m("...")},
		Forbid: []string{m("cmd/...")},
		Direct: true,
	},
	{
		// Package reconciler is the Deployment controller and the wiring of
		// the others (New, Options); its subpackages and every other
		// package stay below it, so only what starts a controller imports
		// it. Its subpackages are not matched: m("reconciler") is exact.
		Name:   "only the wiring imports package reconciler",
		From:   []string{m("...")},
		Except: []string{m("cmd/..."), m("metrics"), m("bench/...")},
		Forbid: []string{m("reconciler")},
		Direct: true,
	},
	{
		// One package speaks to Docker, so the API version it negotiates and
		// the errors it maps are decided in one place. The fake of it (it
		// returns the SDK's types), the end-to-end tests and the benchmark
		// harness (they drive Docker beside dockctl) are the exceptions.
		Name:   "only dockerx imports the Docker SDK",
		From:   []string{m("...")},
		Except: []string{m("dockerx/..."), m("internal/dockerfake"), m("e2e/..."), m("bench/...")},
		Forbid: []string{"github.com/docker/docker/...", "github.com/docker/cli/..."},
		Direct: true,
	},
	{
		// What runs inside the Service helpers (`dockctl helper …`: proxy,
		// DNS server, probe relay, push client, holder) and the workload
		// image: a helper holds no controller state and never speaks to
		// Docker (docs/design.md §10).
		Name: "helper and workload code reaches no store, controller or Docker client",
		From: []string{
			m("internal/dataplane"), m("internal/clusterdns"), m("internal/holder"),
			m("internal/helperapi"), m("internal/grpcprobe"), m("internal/atomicfiles"),
			m("internal/standinapi"), m("cmd/workload"),
		},
		Forbid: []string{m("store/..."), m("reconciler/..."), m("dockerx/..."), "github.com/docker/docker/...", "github.com/docker/cli/..."},
	},
	{
		// Converting a Compose project is a pure translation into
		// manifests: it stores nothing and asks Docker nothing (the
		// package's doc). compose-go is the only one that reads Compose.
		Name:   "compose reaches no store, controller or Docker client",
		From:   []string{m("compose/...")},
		Forbid: []string{m("store/..."), m("reconciler/..."), m("dockerx/..."), "github.com/docker/docker/...", "github.com/docker/cli/..."},
	},
	{
		Name:   "only the compose package reads Compose files",
		From:   []string{m("...")},
		Except: []string{m("compose/...")},
		Forbid: []string{"github.com/compose-spec/..."},
		Direct: true,
	},
	{
		// text/template's executor reaches methods by name through
		// reflection, which turns off the linker's dead-method elimination:
		// linked into dockctl it cost 7.2 MB of a 41 MB binary. go-template
		// output runs on internal/jsontemplate instead; tests may still
		// compare with text/template.
		Name:   "no package of the binary imports text/template or html/template",
		From:   []string{m("...")},
		Except: []string{m("e2e/..."), m("bench/...")},
		Forbid: []string{"text/template", "html/template"},
		Direct: true,
	},
	{
		// grpc probes make one call of grpc.health.v1.Health/Check, which
		// internal/grpcprobe encodes by hand over net/http's HTTP/2: linked
		// into dockctl, grpc-go and its protobuf runtime cost 1.57 MB of a
		// 35.3 MB binary. The test workload serves gRPC with them; tests may
		// import them (a test's imports are not in this graph).
		Name:   "no package of the binary imports the gRPC runtime",
		From:   []string{m("...")},
		Except: []string{m("cmd/workload/..."), m("e2e/..."), m("bench/...")},
		Forbid: []string{"google.golang.org/grpc/..."},
		Direct: true,
	},
}
