package main

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// The CLI's words for its kinds (kindInfo.name).
const (
	kindDeployment = "deployment"
	kindPod        = "pod"
	kindContainer  = "container"
	kindNamespace  = "namespace"
	kindService    = "service"
	kindEndpoints  = "endpoints"
	kindConfigMap  = "configmap"
	kindSecret     = "secret"
	kindClaim      = "persistentvolumeclaim"
	// kindManifests is `get manifests`: the controller's report on its
	// manifests directories (--manifests), as the status of a Flux or
	// Argo source shows whether the last sync applied it.
	kindManifests = "manifests"
	kindEvent     = "event"
	// The workload kinds beyond Deployment (workloads_cli.go).
	kindDaemonSet   = "daemonset"
	kindReplicaSet  = "replicaset"
	kindStatefulSet = "statefulset"
	kindCronJob     = "cronjob"
	kindJob         = "job"
)

// kindInfo is one kind of the CLI, as kubectl's RESTMapper knows a kind:
// its names, where it is stored, and which verbs act on it. Every table
// of kinds the commands use is derived from kinds, so a new kind is one
// entry here (and the code of the verbs it supports).
type kindInfo struct {
	// name is the CLI's word (kindDeployment…); aliases are kubectl's
	// other spellings of it (plural, short names, resource.group).
	name    string
	aliases []string
	api     apiResource
	// categories are the words of get that list the kind with others
	// (kubectl's "all"), each with the kind's place in its list.
	categories map[string]int
	// store is the state directory's kind; "" for a kind dockctl does
	// not store (pods, containers… are Docker's).
	store string
	// manifest is the kind manifests name it by, for explain; "" when a
	// manifest cannot hold it.
	manifest string
	// event is the kind an event's involvedObject names; "" none.
	event string
	// get lists the kind (get.go).
	get getter
	// describe prints the object (describe.go); nil: describe refuses
	// the kind.
	describe describer
	// describeNoEvents: describe shows no events of it (kubectl's
	// NamespaceDescriber shows none).
	describeNoEvents bool
	// diff renders the stored and the next object for diff (apply.go);
	// nil: diffYAML. diffName names them in its headers; nil:
	// KIND/[NAMESPACE/]NAME.
	diff     objectDiff
	diffName func(ns, name string) string
	// storedShape completes the stored object patch and edit show
	// (patch.go); nil: the record's object as it is. patch, edit and
	// label act on every kind the store holds.
	storedShape storedShape
	// delete: delete acts on the kind.
	delete bool
	// names lists the names of its objects in -n's namespace for shell
	// completion (completion.go); nil: those of its stored objects.
	names func(g *globalOptions) []string
	// podsOf lists the pods an object of it selects, for exec and
	// port-forward's KIND/NAME (podtarget.go); nil: they refuse the kind.
	podsOf podSelector
	// wait is how wait finds and judges its objects (waitcmd.go); nil:
	// wait refuses the kind.
	wait *waitOps
	// parseSelector reads -l for the kind; nil: parseSelector.
	parseSelector func(string) (labels.Selector, error)
	// top is top's subcommand of the kind (top.go); nil: none.
	top *topOps
	// rollout is how rollout acts on it (rollout.go); nil: rollout
	// refuses the kind.
	rollout *rolloutOps
	// logs is how logs reads its objects (logs.go); nil: logs refuses
	// the kind.
	logs *logsOps
	// containerNames names the containers of an object's template for
	// the completion of -c (completion.go); nil: none.
	containerNames func(g *globalOptions, name string) []string
	// targetPorts resolves port-forward's ports for KIND/NAME
	// (portforward.go); nil: the pod's own (resolvePodPorts).
	targetPorts func(snap *snapshot, g *globalOptions, name string, specs []string, p podPorts) ([]string, error)
	// completed: the shell completion of get offers it.
	completed bool
	// podTemplate is the path of the pod template in the stored object
	// (spec.template; a CronJob's spec.jobTemplate.spec.template), which
	// set env and set resources change (set_env.go); "": the kind has
	// none, and they refuse it.
	podTemplate []string
	// writeOrder places the kind in the lists of the verbs that change
	// objects (delete, label, patch, edit, explain), which kubectl's
	// messages and completions give in another order than get's and
	// describe's (kinds' order): services before namespaces.
	writeOrder int
}

// kinds are the CLI's kinds, in the order get and describe list them
// (kindTable, set by init: a kind's functions refer back to it).
var kinds []*kindInfo

func kindTable() []*kindInfo {
	return append([]*kindInfo{
		{name: kindDeployment, aliases: []string{"deployments", "deploy", "deployment.apps", "deployments.apps"}, // deployments.apps: what get -o name prints, as kubectl
			api:        apiResource{"Deployment", "deployments", "apps", "v1", true},
			get:        getDeployments,
			categories: map[string]int{"all": 3}, store: store.KindDeployment, manifest: manifests.Kind, event: "Deployment",
			describe: describeDeploymentObject,
			diff:     diffDeployment, diffName: diffDeploymentName,
			delete:         true,
			podsOf:         podsOfDeployment,
			rollout:        &deploymentRollout,
			wait:           &deploymentWait,
			top:            &deploymentTop,
			logs:           &deploymentLogs,
			containerNames: (*globalOptions).deploymentContainerNames,
			podTemplate:    specTemplate,
			completed:      true, writeOrder: 0},
		{name: kindPod, aliases: []string{"pods", "po"},
			api:        apiResource{"Pod", "pods", "", "v1", true},
			get:        getPods,
			categories: map[string]int{"all": 0}, event: "Pod",
			describe: describePodObject,
			delete:   true,
			names:    (*globalOptions).completePodNames,
			podsOf:   podsOfPod,
			wait:     &podWait, parseSelector: parseContainerSelector,
			top:            &podTop,
			logs:           &podLogs,
			containerNames: (*globalOptions).podContainerNames,
			completed:      true, writeOrder: 1},
		{name: kindContainer, aliases: []string{"containers"},
			api:       apiResource{"Container", "containers", "dockctl.io", "v1", true},
			get:       getContainers,
			names:     (*globalOptions).completeContainerNames,
			completed: true, writeOrder: 2},
		{name: kindNamespace, aliases: []string{"namespaces", "ns"},
			api:   apiResource{"Namespace", "namespaces", "", "v1", false},
			get:   getNamespaces,
			store: store.KindNamespace, manifest: manifests.KindNamespace, event: "Namespace",
			describe: describeNamespaceObject, describeNoEvents: true,
			delete:      true,
			storedShape: storedNamespace,
			completed:   true, writeOrder: 4},
		{name: kindService, aliases: []string{"services", "svc"},
			api:        apiResource{"Service", "services", "", "v1", true},
			get:        getServices,
			categories: map[string]int{"all": 1}, store: store.KindService, manifest: manifests.KindService, event: "Service",
			describe:    describeServiceObject,
			delete:      true,
			storedShape: storedService,
			podsOf:      podsOfService,
			targetPorts: serviceTargetPorts,
			completed:   true, writeOrder: 3},
		{name: kindEndpoints, aliases: []string{"endpoint", "ep"},
			api:       apiResource{"Endpoints", "endpoints", "", "v1", true},
			get:       getEndpoints,
			event:     "Endpoints",
			describe:  describeEndpointsObject,
			names:     (*globalOptions).completeEndpointsNames,
			completed: true, writeOrder: 5},
		{name: kindConfigMap, aliases: []string{"configmaps", "cm"},
			api:   apiResource{"ConfigMap", "configmaps", "", "v1", true},
			get:   getConfigMaps,
			store: store.KindConfigMap, manifest: manifests.KindConfigMap, event: "ConfigMap",
			describe:  describeConfigMapObject,
			delete:    true,
			completed: true, writeOrder: 6},
		{name: kindSecret, aliases: []string{"secrets"},
			api:   apiResource{"Secret", "secrets", "", "v1", true},
			get:   getSecrets,
			store: store.KindSecret, manifest: manifests.KindSecret, event: "Secret",
			describe:    describeSecretObject,
			delete:      true,
			storedShape: storedSecret, diff: diffSecret,
			completed: true, writeOrder: 7},
		{name: kindClaim, aliases: []string{"persistentvolumeclaims", "pvc", "pvcs"},
			api:   apiResource{"PersistentVolumeClaim", "persistentvolumeclaims", "", "v1", true},
			get:   getClaims,
			store: store.KindPersistentVolumeClaim, manifest: manifests.KindPersistentVolumeClaim, event: "PersistentVolumeClaim",
			describe:  describeClaim,
			delete:    true,
			completed: true, writeOrder: 8},
		withRollout(workloadKindInfo(&daemonSetView, kindDaemonSet, []string{"daemonsets", "ds", "daemonset.apps", "daemonsets.apps"},
			apiResource{"DaemonSet", "daemonsets", "apps", "v1", true}, specTemplate, 2, 11), workloadRollout(&daemonSetView)),
		workloadKindInfo(&replicaSetView, kindReplicaSet, []string{"replicasets", "rs", "replicaset.apps", "replicasets.apps"},
			apiResource{"ReplicaSet", "replicasets", "apps", "v1", true}, specTemplate, 4, 12),
		withRollout(workloadKindInfo(&statefulSetView, kindStatefulSet, []string{"statefulsets", "sts", "statefulset.apps", "statefulsets.apps"},
			apiResource{"StatefulSet", "statefulsets", "apps", "v1", true}, specTemplate, 5, 13), workloadRollout(&statefulSetView)),
		workloadKindInfo(&cronJobView, kindCronJob, []string{"cronjobs", "cj", "cronjob.batch", "cronjobs.batch"},
			apiResource{"CronJob", "cronjobs", "batch", "v1", true}, []string{"spec", "jobTemplate", "spec", "template"}, 6, 14),
		workloadKindInfo(&jobView, kindJob, []string{"jobs", "job.batch", "jobs.batch"},
			apiResource{"Job", "jobs", "batch", "v1", true}, specTemplate, 7, 15),
		{name: kindManifests, aliases: []string{"manifestssource", "manifestssources"},
			api:        apiResource{"ManifestsSource", "manifestssources", "dockctl.io", "v1", false},
			get:        getManifests,
			writeOrder: 9},
		{name: kindEvent, aliases: []string{"events", "ev"},
			api:        apiResource{"Event", "events", "", "v1", true},
			get:        getEvents,
			writeOrder: 10},
	}, routingKindInfos()...) // routing_cli.go
}

// workloadKindInfo is the entry of a workload kind beyond Deployment:
// stored, listed by get (and get all at place all), described, deleted,
// patched and labelled as any stored kind.
func workloadKindInfo(v *workloadView, name string, aliases []string, api apiResource, podTemplate []string, all, writeOrder int) *kindInfo {
	return &kindInfo{name: name, aliases: aliases, api: api, podTemplate: podTemplate,
		get: v.getter(), categories: map[string]int{"all": all}, store: v.kind, manifest: v.kind, event: v.kind,
		describe: v.describer(), delete: true, completed: true, writeOrder: writeOrder,
		podsOf: podsOfWorkload(v.kind), logs: workloadLogs(v.kind), wait: workloadWait(v)}
}

// withRollout is k, rolled out by r (rollout_workloads.go).
func withRollout(k *kindInfo, r *rolloutOps) *kindInfo {
	k.rollout = r
	return k
}

// specTemplate is the path of the pod template of most workload kinds.
var specTemplate = []string{"spec", "template"}

// kindNames are the CLI's words of the kinds for which has holds, in
// kinds' order.
func kindNames(has func(k *kindInfo) bool) []string {
	var out []string
	for _, k := range kinds {
		if has(k) {
			out = append(out, k.name)
		}
	}
	return out
}

// writeKindNames are kindNames in the order of the verbs that change
// objects (kindInfo.writeOrder).
func writeKindNames(has func(k *kindInfo) bool) []string {
	ks := make([]*kindInfo, 0, len(kinds))
	for _, k := range kinds {
		if has(k) {
			ks = append(ks, k)
		}
	}
	sort.SliceStable(ks, func(i, j int) bool { return ks[i].writeOrder < ks[j].writeOrder })
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.name
	}
	return out
}

// pluralsOf are the plurals (kubectl's resource) of the CLI's kinds names.
func pluralsOf(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = apiResources[n].resource
	}
	return out
}

// The tables of the commands, all derived from kinds by init.
var (
	apiResources map[string]apiResource
	kindAliases  map[string]string
	// storeKinds maps the CLI's kinds to the store's.
	storeKinds map[string]string
	// explainKinds are the CLI's kinds that explain covers: those a
	// manifest holds, by the kind manifests names them.
	explainKinds map[string]string
	// eventKinds maps the CLI's kinds onto the Kubernetes kinds events
	// name.
	eventKinds map[string]string
	// getters list each kind get knows, all of its objects or the one
	// named.
	getters map[string]getter
	// categories are the resource categories get expands, each into its
	// kinds in the order kubectl lists them (kubectl's all also holds
	// replica sets, stateful sets, jobs…, which dockctl has not).
	categories map[string][]string
	// describeKinds are the kinds describe describes.
	describeKinds []string
	// deleteKinds are the kinds delete deletes: those the state
	// directory stores, and pods (deletepod.go).
	deleteKinds []string
	// patchKinds are the kinds patch, edit and label change: those
	// dockctl stores.
	patchKinds []string
	// waitKinds are the kinds wait waits for.
	waitKinds []string
	// logsKinds are the kinds logs reads.
	logsKinds []string
	// podTargetKinds are the kinds of exec and port-forward's KIND/NAME.
	podTargetKinds []string
	// templateKinds are the kinds set env and set resources change.
	templateKinds []string
)

// The kinds each command completes, in kubectl's plural spelling.
var (
	getKinds        []string
	storeKindWords  []string
	descKinds       []string
	deleteKindWords []string
	deployKinds     []string
)

func init() {
	kinds = kindTable()
	apiResources = map[string]apiResource{}
	kindAliases = map[string]string{}
	getters = map[string]getter{}
	categories = map[string][]string{}
	for _, k := range kinds {
		apiResources[k.name] = k.api
		kindAliases[k.name] = k.name
		for _, a := range k.aliases {
			kindAliases[a] = k.name
		}
		if k.get != nil {
			getters[k.name] = k.get
		}
	}
	storeKinds = kindMap(func(k *kindInfo) string { return k.store })
	explainKinds = kindMap(func(k *kindInfo) string { return k.manifest })
	eventKinds = kindMap(func(k *kindInfo) string { return k.event })
	for _, k := range kinds {
		for c := range k.categories {
			categories[c] = append(categories[c], k.name)
		}
	}
	for c, names := range categories {
		sort.SliceStable(names, func(i, j int) bool {
			return kindByName(names[i]).categories[c] < kindByName(names[j]).categories[c]
		})
	}
	describeKinds = kindNames(func(k *kindInfo) bool { return k.describe != nil })
	deleteKinds = writeKindNames(func(k *kindInfo) bool { return k.delete })
	patchKinds = writeKindNames(func(k *kindInfo) bool { return k.store != "" })
	waitKinds = kindNames(func(k *kindInfo) bool { return k.wait != nil })
	logsKinds = kindNames(func(k *kindInfo) bool { return k.logs != nil })
	podTargetKinds = kindNames(func(k *kindInfo) bool { return k.podsOf != nil })
	templateKinds = kindNames(func(k *kindInfo) bool { return k.podTemplate != nil })

	getKinds = pluralsOf(kindNames(func(k *kindInfo) bool { return k.completed }))
	storeKindWords = pluralsOf(patchKinds)
	descKinds = pluralsOf(describeKinds)
	deleteKindWords = pluralsOf(deleteKinds)
	deployKinds = pluralsOf([]string{kindDeployment})
}

// kindMap maps each kind's CLI word to f of it, where f gives one.
func kindMap(f func(k *kindInfo) string) map[string]string {
	m := map[string]string{}
	for _, k := range kinds {
		if v := f(k); v != "" {
			m[k.name] = v
		}
	}
	return m
}

// kindByName is the kind of the CLI's word name; nil for none.
func kindByName(name string) *kindInfo {
	for _, k := range kinds {
		if k.name == name {
			return k
		}
	}
	return nil
}

// deletedByController says whether delete asks the controller to delete
// the objects of kind, which dockctl does not store (pods: deletepod.go).
func deletedByController(kind string) bool {
	k := kindByName(kind)
	return k != nil && k.delete && k.store == ""
}

// kindByStore is the kind the store names kind; nil for none.
func kindByStore(kind string) *kindInfo {
	for _, k := range kinds {
		if k.store != "" && k.store == kind {
			return k
		}
	}
	return nil
}

// selectorParser reads -l for objects of k: pods' with their short keys
// (parseContainerSelector), others' as Kubernetes' label selectors.
func (k *kindInfo) selectorParser() func(string) (labels.Selector, error) {
	if k.parseSelector != nil {
		return k.parseSelector
	}
	return parseSelector
}

// kindsSentence is the sentence of a command's help that lists the kinds
// it acts on (plurals, from the kind table), so that its help names every
// kind the moment the table has it.
func kindsSentence(plurals []string) string {
	return "Kinds: " + strings.Join(plurals, ", ") + "."
}
