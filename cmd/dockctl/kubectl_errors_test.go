package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// errorsFixture is what the situations of TestKubectlErrors run against:
// a deployment, a service and a configmap in the default namespace, and
// an empty namespace team.
const errorsFixture = `apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {a: "1"}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: dockctl-workload:dev}]
`

// kubectlCase is one situation: what dockctl is run with, and kubectl's
// output for it where dockctl's differs on purpose (why says why).
type kubectlCase struct {
	situation string
	args      []string
	stdin     string
	// env are variables set for this run only (the instance);
	// otherStateDir stands for an empty state directory.
	env map[string]string
	// help: stdout is the command's help, checked against its --help and
	// not recorded (it holds the machine's default state directory).
	help         bool
	kubectl, why string
}

// otherStateDir, as a value of kubectlCase.env, is an empty state
// directory of the run's own.
const otherStateDir = "<another state directory>"

// kubectlCases are the common failures of every command, as in
// kubectl's: the golden file holds dockctl's stdout, stderr and exit
// status for each, and kubectl's output where it differs on purpose.
var kubectlCases = []kubectlCase{
	// Commands and flags.
	{situation: "unknown command", args: []string{"frob"}},
	{situation: "unknown command, with suggestions", args: []string{"gett"},
		why: "kubectl suggests among its own commands"},
	{situation: "unknown flag", args: []string{"get", "deployments", "--frob"}},
	{situation: "unknown flag of the root", args: []string{"--frob"}},
	{situation: "invalid flag value", args: []string{"scale", "deployment", "web", "--replicas", "x"}},
	{situation: "unknown subcommand", args: []string{"rollout", "frob"}},
	{situation: "a group alone: its help on stdout, exit 1", args: []string{"rollout"}, help: true},
	{situation: "a group alone: its help on stderr, exit 1", args: []string{"set"}, help: true},
	{situation: "controller: unknown flag", args: []string{"controller", "--frob"}},

	// Missing and extra arguments.
	{situation: "get without a kind", args: []string{"get"},
		kubectl: `You must specify the type of resource to get. Use "kubectl api-resources" for a complete list of supported resources.

error: Required resource not specified.
Use "kubectl explain <resource>" for a detailed description of that resource (e.g. kubectl explain pods).
See 'kubectl get -h' for help and examples
exit 1`, why: "explain covers the kinds dockctl accepts from files, so its example names deployments, not pods"},
	{situation: "describe without a kind", args: []string{"describe"}},
	{situation: "describe of a kind without a name", args: []string{"describe", "deployments"},
		kubectl: "(describes every deployment of the namespace)", why: "dockctl describes named objects only"},
	{situation: "delete of nothing", args: []string{"delete"}},
	{situation: "delete of a kind without a name", args: []string{"delete", "deployment"}},
	{situation: "scale without --replicas", args: []string{"scale", "deployment", "web"}},
	{situation: "scale of nothing", args: []string{"scale", "--replicas", "1"}},
	{situation: "scale of two", args: []string{"scale", "deployment", "web", "api", "--replicas", "1"},
		kubectl: "(scales both)", why: "dockctl scales one deployment at a time"},
	{situation: "a negative replica count", args: []string{"scale", "deployment", "web", "--replicas", "-1"}},
	{situation: "rollout of nothing", args: []string{"rollout", "status"}},
	{situation: "set image of nothing", args: []string{"set", "image"}},
	{situation: "set image without an image", args: []string{"set", "image", "deployment/web"}},
	{situation: "label of nothing", args: []string{"label", "a=b"}},
	{situation: "patch without a patch", args: []string{"patch", "deployment", "web"}},
	{situation: "apply without -f", args: []string{"apply"}},
	{situation: "apply with an argument", args: []string{"apply", "web.yaml"}},
	{situation: "diff without -f: exit 2", args: []string{"diff"},
		kubectl: "error: must specify one of -f and -k\nexit 2", why: "its diff also reads --manifests"},
	{situation: "diff with an argument: exit 2", args: []string{"diff", "web.yaml"}},
	{situation: "diff: an unknown flag is exit 2", args: []string{"diff", "--frob"}},
	{situation: "create alone: its help on stderr, exit 1", args: []string{"create"}, help: true,
		kubectl: "Error: must specify one of -f and -k\n\n(the help)\nexit 1", why: "dockctl create takes no -f (apply -f does)"},
	{situation: "create of a kind it does not create", args: []string{"create", "ingress", "web"},
		kubectl: "(creates the ingress)", why: "dockctl runs no Ingress"},
	{situation: "create deployment without --image", args: []string{"create", "deployment", "web"}},
	{situation: "create namespace without a name", args: []string{"create", "namespace"},
		kubectl: "error: exactly one NAME is required, got 0\nSee 'kubectl create namespace -h' for help and examples\nexit 1",
		why:     "namespace is an argument of dockctl create, not a subcommand"},
	{situation: "completion without a shell", args: []string{"completion"}},
	{situation: "completion of an unknown shell", args: []string{"completion", "tcsh"}},
	{situation: "version with an argument", args: []string{"version", "x"}},

	// Resource types.
	{situation: "get of an unknown type", args: []string{"get", "foo"}},
	{situation: "describe of an unknown type", args: []string{"describe", "foo", "x"}},
	{situation: "delete of an unknown type", args: []string{"delete", "foo/x"}},
	{situation: "a name that is no type", args: []string{"scale", "web", "--replicas", "1"}},
	{situation: "resource/name with an empty name", args: []string{"get", "deployment/"}},
	{situation: "resource/name mixed with a type", args: []string{"get", "deployment", "deployment/web"}},
	{situation: "several types", args: []string{"get", "deployment/web", "service/web", "-o", "name"}},
	{situation: "several types, comma-separated, one missing", args: []string{"get", "deployments,configmaps", "web", "-o", "name"}},

	// Objects that do not exist.
	{situation: "get of a missing object", args: []string{"get", "deployment", "nope"}},
	{situation: "get of several names, two missing", args: []string{"get", "deployments", "web", "nope", "other", "-o", "name"}},
	{situation: "get of a missing service", args: []string{"get", "svc/nope"}},
	{situation: "a missing object of another namespace", args: []string{"get", "configmap", "nope", "-n", "team"},
		kubectl: "Error from server (NotFound): configmaps \"nope\" not found\nexit 1", why: "dockctl names the namespace it looked in when not default"},
	{situation: "a missing object of another instance", args: []string{"get", "deployment", "nope"},
		env:     map[string]string{"DOCKCTL_INSTANCE": "ci", "DOCKCTL_STATE_DIR": otherStateDir},
		kubectl: "Error from server (NotFound): deployments.apps \"nope\" not found\nexit 1", why: "dockctl names the instance it looked in when not default"},
	{situation: "a missing namespace", args: []string{"get", "ns", "nope"}},
	{situation: "describe of one found and one missing", args: []string{"describe", "cm", "cfg", "nope"}},
	{situation: "delete of a missing object", args: []string{"delete", "deployment", "nope"}},
	{situation: "delete of a missing object, --ignore-not-found", args: []string{"delete", "deployment", "nope", "--ignore-not-found"}},
	{situation: "delete of two missing objects", args: []string{"delete", "configmap", "nope", "other"}},
	{situation: "scale of a missing deployment", args: []string{"scale", "deploy/nope", "--replicas", "1"},
		why: "as kubectl since the fix of kubernetes/kubectl#1770; earlier releases print \"error: no objects passed to scale\" before it"},
	{situation: "rollout status of a missing deployment", args: []string{"rollout", "status", "deployment/nope"}},
	{situation: "logs of a missing deployment", args: []string{"logs", "deployment/nope"}},
	{situation: "wait for a missing deployment", args: []string{"wait", "--for=condition=Available", "deployment/nope"}},
	{situation: "label of a missing object", args: []string{"label", "svc", "nope", "a=b"}},
	{situation: "set image of a missing deployment", args: []string{"set", "image", "deployment/nope", "web=web:2"}},
	{situation: "events of a missing object", args: []string{"events", "--for", "deployment/nope"}},
	{situation: "an empty listing", args: []string{"get", "deployments", "-n", "team"}},
	{situation: "an empty listing of every namespace", args: []string{"get", "secrets", "-A"}},
	{situation: "create of a namespace that exists", args: []string{"create", "namespace", "team"}},

	// Kinds a command does not act on.
	{situation: "scale of a service", args: []string{"scale", "service", "web", "--replicas", "1"},
		kubectl: "Error from server (NotFound): the server could not find the requested resource (patch services web)\nexit 1",
		why:     "kubectl's is the server's reply to a request for the scale subresource services lack"},
	{situation: "rollout status of a service", args: []string{"rollout", "status", "svc/web"}},
	{situation: "rollout history of a service", args: []string{"rollout", "history", "svc/web"}},
	{situation: "rollout undo of a service", args: []string{"rollout", "undo", "svc/web"}},
	{situation: "rollout restart of a service", args: []string{"rollout", "restart", "svc/web"}},
	{situation: "set image of a service", args: []string{"set", "image", "svc/web", "web=web:2"}},
	{situation: "label of a pod", args: []string{"label", "pod", "web-0", "a=b"},
		kubectl: "(labels the pod)", why: "dockctl's pods are its deployments': it labels stored objects only"},

	// Formats, selectors, files.
	{situation: "an invalid output format", args: []string{"get", "deployments", "-o", "foo"},
		kubectl: `error: unable to match a printer suitable for the output format "foo", allowed formats are: custom-columns,custom-columns-file,go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,wide,yaml
exit 1`, why: "dockctl lists the formats it has"},
	{situation: "an invalid selector of a listing", args: []string{"get", "deployments", "-l", "a in (b"}},
	{situation: "an invalid selector of delete", args: []string{"delete", "configmaps", "-l", "a=(b"}},
	{situation: "an invalid selector of files", args: []string{"apply", "-f", "-", "-l", "a in (b"}, stdin: errorsFixture},
	{situation: "a name with a selector", args: []string{"get", "deployment", "web", "-l", "app=web"}},
	{situation: "a name across all namespaces", args: []string{"get", "deployment", "web", "-A"}},
	{situation: "an invalid manifest", args: []string{"apply", "-f", "-"}, stdin: "kind: Nope\n",
		kubectl: `error: error validating "STDIN": error validating data: apiVersion not set; if you choose to ignore these errors, turn validation off with --validate=false
exit 1`, why: "dockctl's validation names the file and line of each problem"},
	{situation: "a file that does not exist", args: []string{"apply", "-f", "nope.yaml"}},
	{situation: "two files that do not exist", args: []string{"delete", "-f", "a.yaml", "-f", "b.yaml"},
		kubectl: "the path \"a.yaml\" does not exist\nthe path \"b.yaml\" does not exist\nexit 1", why: "dockctl puts error: before each of several errors, kubectl only before a single one"},
	{situation: "diff of a file that does not exist: exit 2", args: []string{"diff", "-f", "nope.yaml"}},

	// Rollouts and waits.
	{situation: "undo to a missing revision", args: []string{"rollout", "undo", "deployment/web", "--to-revision", "9"}},
	{situation: "undo without an earlier revision", args: []string{"rollout", "undo", "deployment/web"}},
	{situation: "history of a missing revision", args: []string{"rollout", "history", "deployment/web", "--revision", "9"}},
	{situation: "resume of a deployment that is not paused", args: []string{"rollout", "resume", "deployment/web"}},
	{situation: "pause", args: []string{"rollout", "pause", "deployment/web"},
		kubectl: "deployment.apps/web paused\nexit 0", why: "dockctl's success lines name deployment/NAME"},
	{situation: "pause of a paused deployment", args: []string{"rollout", "pause", "deployment/web"}},
	{situation: "restart of a paused deployment", args: []string{"rollout", "restart", "deployment/web"}},
	{situation: "undo of a paused deployment", args: []string{"rollout", "undo", "deployment/web", "--to-revision", "1"}},
	{situation: "a wait that times out (no controller runs)", args: []string{"wait", "--for=condition=Available", "deployment/web", "--timeout", "1s"},
		kubectl: "error: timed out waiting for the condition on deployments/web\nexit 1", why: "dockctl says when no controller runs for the instance (its conditions, stale, are then Unknown)"},

	// diff's exit statuses.
	{situation: "diff: no difference, exit 0", args: []string{"diff", "-f", "-"}, stdin: errorsFixture},
	{situation: "diff: an invalid file, exit 2", args: []string{"diff", "-f", "-"}, stdin: "kind: Nope\n",
		kubectl: `error: error validating "STDIN": error validating data: apiVersion not set; if you choose to ignore these errors, turn validation off with --validate=false
exit 2`, why: "dockctl's validation names the file and line of each problem"},
	{situation: "diff: a difference, exit 1", args: []string{"diff", "-f", "-"}, stdin: strings.Replace(errorsFixture, `data: {a: "1"}`, `data: {a: "2"}`, 1)},
}

// TestKubectlErrors runs every situation of kubectlCases through the real
// root command and main's error handling (execute), against a state
// directory holding errorsFixture and the fake Docker Engine, and holds
// what each prints and exits with in testdata/kubectl-errors.golden.
func TestKubectlErrors(t *testing.T) {
	startFakeDaemon(t)
	stateDir := t.TempDir()
	controllerBeating(t, stateDir, "default")
	t.Setenv("DOCKCTL_STATE_DIR", stateDir)
	t.Setenv("DOCKCTL_INSTANCE", "")
	if code, out, errOut := runMain(t, errorsFixture, "apply", "-f", "-"); code != 0 {
		t.Fatalf("fixture: exit %d\n%s%s", code, out, errOut)
	}
	var buf bytes.Buffer
	for _, c := range kubectlCases {
		cmdline := "dockctl " + strings.Join(quoted(c.args), " ")
		restore := map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(c.env)) {
			v := c.env[k]
			cmdline = k + "=" + quoted([]string{v})[0] + " " + cmdline
			if v == otherStateDir {
				v = t.TempDir()
			}
			restore[k] = os.Getenv(k)
			t.Setenv(k, v)
		}
		code, out, errOut := runMain(t, c.stdin, c.args...)
		for k, v := range restore {
			t.Setenv(k, v)
		}
		if c.help {
			_, help, _ := runMain(t, "", append(c.args, "--help")...)
			if out+errOut != help {
				t.Errorf("%s: printed\n%s%s\nwant its help\n%s", cmdline, out, errOut, help)
			}
			out, errOut = "", ""
			cmdline += "   # prints its help"
		}
		fmt.Fprintf(&buf, "## %s\n$ %s\n", c.situation, cmdline)
		if out != "" {
			fmt.Fprintf(&buf, "--- stdout\n%s", out)
		}
		if errOut != "" {
			fmt.Fprintf(&buf, "--- stderr\n%s", errOut)
		}
		fmt.Fprintf(&buf, "--- exit %d\n", code)
		if c.kubectl != "" {
			fmt.Fprintf(&buf, "--- kubectl (differs on purpose: %s)\n%s\n", c.why, c.kubectl)
		} else if c.why != "" {
			fmt.Fprintf(&buf, "--- kubectl: the same (%s)\n", c.why)
		}
		buf.WriteString("\n")
	}
	golden(t, "kubectl-errors", buf.Bytes())
}

// quoted quotes the arguments a shell would split.
func quoted(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsAny(a, " ()*'\"<>") {
			out[i] = "'" + a + "'"
		}
	}
	return out
}

// kubectl's errors and exit codes for top, explain, logs -l, exec and
// port-forward, which print their own rather than the central wording
// (root.go's usageErrorf, subcommandsOnly, noResources,
// unknownResourceType): what kubectl prints for the same situation. Each
// case is kubectl's stderr and exit status, dockctl for kubectl in the
// command's name (kubectl's sources:
// staging/src/k8s.io/kubectl/pkg/cmd/{top,explain,logs,exec,portforward},
// cmdutil.UsageErrorf and DefaultSubCommandRun).
//
// kubectlErrorCase is one situation: the arguments, kubectl's stderr (in
// full, or its first lines with prefix) and exit status.
type kubectlErrorCase struct {
	situation string
	args      []string
	stderr    string
	prefix    bool
	code      int
}

// checkKubectlErrors applies errorsFixture to a new state directory (with a
// fake Docker daemon) and runs each case as main does.
func checkKubectlErrors(t *testing.T, cases []kubectlErrorCase) {
	t.Helper()
	startFakeDaemon(t)
	stateDir := t.TempDir()
	controllerBeating(t, stateDir, "default")
	t.Setenv("DOCKCTL_STATE_DIR", stateDir)
	t.Setenv("DOCKCTL_INSTANCE", "")
	if code, out, errOut := runMain(t, errorsFixture, "apply", "-f", "-"); code != 0 {
		t.Fatalf("fixture: exit %d\n%s%s", code, out, errOut)
	}
	for _, c := range cases {
		t.Run(c.situation, func(t *testing.T) {
			code, out, errOut := runMain(t, "", c.args...)
			ok := errOut == c.stderr || c.prefix && strings.HasPrefix(errOut, c.stderr)
			if !ok || code != c.code || (c.code != 0 && out != "") {
				t.Errorf("dockctl %s:\n--- stdout\n%s--- stderr\n%s--- exit %d\nwant kubectl's:\n--- stderr\n%s--- exit %d",
					strings.Join(c.args, " "), out, errOut, code, c.stderr, c.code)
			}
		})
	}
}
