package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// The workload kinds beyond Deployment, as get and describe show them: the
// stored object with the status its controller wrote (docs/design.md
// §17.1). Each kind is its columns (kubectl's) and the cells of one
// object; the listing, -o formats and describe are shared.

// workloadView is how get shows one workload kind.
type workloadView struct {
	kind    string // the store's
	name    string // -o name's prefix: job.batch…
	columns []string
	wide    []string
	// status returns a new value of the kind's status type.
	status func() any
	// cells are the row of object o with status st (after NAME; AGE is
	// added).
	cells func(o *store.StoredObject, st any, now time.Time) (cells, wide []string)
}

func int32Or(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

var (
	jobView = workloadView{kind: store.KindJob, name: "job.batch",
		columns: []string{"NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"},
		status:  func() any { return &batchv1.JobStatus{} },
		cells: func(o *store.StoredObject, s any, now time.Time) ([]string, []string) {
			j, st := o.Object.(*manifests.Job), s.(*batchv1.JobStatus)
			comp := fmt.Sprintf("%d/%d", st.Succeeded, int32Or(j.Spec.Completions, 1))
			dur := ""
			if st.StartTime != nil {
				end := now
				if st.CompletionTime != nil {
					end = st.CompletionTime.Time
				}
				dur = age(end.Sub(st.StartTime.Time))
			}
			return []string{jobStatusWord(st), comp, dur}, nil
		}}
	cronJobView = workloadView{kind: store.KindCronJob, name: "cronjob.batch",
		columns: []string{"NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"},
		status:  func() any { return &batchv1.CronJobStatus{} },
		cells: func(o *store.StoredObject, s any, now time.Time) ([]string, []string) {
			c, st := o.Object.(*manifests.CronJob), s.(*batchv1.CronJobStatus)
			tz, last := "<none>", "<none>"
			if c.Spec.TimeZone != nil {
				tz = *c.Spec.TimeZone
			}
			if st.LastScheduleTime != nil {
				last = age(now.Sub(st.LastScheduleTime.Time))
			}
			return []string{c.Spec.Schedule, tz, fmt.Sprint(c.Spec.Suspend != nil && *c.Spec.Suspend), fmt.Sprint(len(st.Active)), last}, nil
		}}
	replicaSetView = workloadView{kind: store.KindReplicaSet, name: "replicaset.apps",
		columns: []string{"NAME", "DESIRED", "CURRENT", "READY", "AGE"},
		status:  func() any { return &appsv1.ReplicaSetStatus{} },
		cells: func(o *store.StoredObject, s any, _ time.Time) ([]string, []string) {
			rs, st := o.Object.(*manifests.ReplicaSet), s.(*appsv1.ReplicaSetStatus)
			return []string{fmt.Sprint(rs.Replicas()), fmt.Sprint(st.Replicas), fmt.Sprint(st.ReadyReplicas)}, nil
		}}
	daemonSetView = workloadView{kind: store.KindDaemonSet, name: "daemonset.apps",
		columns: []string{"NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"},
		status:  func() any { return &appsv1.DaemonSetStatus{} },
		cells: func(o *store.StoredObject, s any, _ time.Time) ([]string, []string) {
			_, st := o.Object.(*manifests.DaemonSet), s.(*appsv1.DaemonSetStatus)
			// nodeSelector is ignored on input (one node): none is stored.
			sel := "<none>"
			return []string{fmt.Sprint(st.DesiredNumberScheduled), fmt.Sprint(st.CurrentNumberScheduled), fmt.Sprint(st.NumberReady),
				fmt.Sprint(st.UpdatedNumberScheduled), fmt.Sprint(st.NumberAvailable), sel}, nil
		}}
	statefulSetView = workloadView{kind: store.KindStatefulSet, name: "statefulset.apps",
		columns: []string{"NAME", "READY", "AGE"},
		status:  func() any { return &appsv1.StatefulSetStatus{} },
		cells: func(o *store.StoredObject, s any, _ time.Time) ([]string, []string) {
			ss, st := o.Object.(*manifests.StatefulSet), s.(*appsv1.StatefulSetStatus)
			return []string{fmt.Sprintf("%d/%d", st.ReadyReplicas, int32Or(ss.Spec.Replicas, 1))}, nil
		}}
)

// jobStatusWord is kubectl's STATUS column of a Job: the final
// condition first (a Job keeps its SuccessCriteriaMet or FailureTarget
// beside its Complete or Failed), then the interim ones, else Running.
func jobStatusWord(st *batchv1.JobStatus) string {
	for _, typ := range []batchv1.JobConditionType{batchv1.JobComplete, batchv1.JobFailed,
		batchv1.JobSuccessCriteriaMet, batchv1.JobFailureTarget, batchv1.JobSuspended} {
		for _, c := range st.Conditions {
			if c.Type == typ && c.Status == "True" {
				return string(typ)
			}
		}
	}
	return "Running"
}

// workloadItem is one stored workload with its status.
type workloadItem struct {
	obj    *store.StoredObject
	status any
}

// list reads the live objects of v's kind that the options select.
func (v *workloadView) list(cmd *cobra.Command, g *globalOptions, inScope func(ns string) bool, name string, sel labels.Selector) ([]workloadItem, error) {
	st, err := g.readStore()
	if err != nil {
		return nil, err
	}
	objs, errs := st.ListObjects(v.kind)
	for _, err := range errs {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", err)
	}
	var out []workloadItem
	for _, o := range objs {
		m := o.Meta
		if o.Deleted || !inScope(m.NamespaceOrDefault()) || (name != "" && m.Name != name) || !sel.Matches(labels.Set(m.Labels)) {
			continue
		}
		s := v.status()
		ref := store.ObjectRef{Kind: v.kind, Namespace: m.Namespace, Name: m.Name}
		if _, err := st.ReadWorkloadStatus(ref, o.Created, s); err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning:", err)
		}
		out = append(out, workloadItem{obj: o, status: s})
	}
	return out, nil
}

// objectWithStatus is what -o json|yaml prints: the object, its
// namespace spelled, and status.
func objectWithStatus(it workloadItem) (any, error) {
	b, err := json.Marshal(it.obj.Object)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		md["namespace"] = it.obj.Meta.NamespaceOrDefault()
	}
	sb, err := json.Marshal(it.status)
	if err != nil {
		return nil, err
	}
	var s any
	if err := json.Unmarshal(sb, &s); err != nil {
		return nil, err
	}
	m["status"] = s
	return m, nil
}

// getter is get of v's kind.
func (v *workloadView) getter() getter {
	return func(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error {
		sel, err := parseSelector(o.selector)
		if err != nil {
			return err
		}
		items, err := v.list(cmd, g, func(ns string) bool { return o.inScope(g, ns) }, name, sel)
		if err != nil {
			return err
		}
		if done, err := o.noConfig(cmd, g, v.kind, apiResourceOf(v.kind).resource, name, len(items)); done {
			return err
		}
		return v.render(cmd.OutOrStdout(), time.Now(), items, o.printer, name != "", o.allNamespaces)
	}
}

func (v *workloadView) render(out io.Writer, now time.Time, items []workloadItem, p *printer, single, allNamespaces bool) error {
	t := &table{kind: v.name, columns: v.columns, wide: v.wide}
	for _, it := range items {
		cells, wide := v.cells(it.obj, it.status, now)
		m := it.obj.Meta
		row := row{namespace: m.NamespaceOrDefault(), name: m.Name, labels: m.Labels, id: createdID(it.obj.Created),
			cells: append(append([]string{m.Name}, cells...), age(now.Sub(it.obj.Created))), wide: wide,
			object: func() (any, error) { return objectWithStatus(it) }}
		t.rows = append(t.rows, row)
	}
	return p.print(out, t, single, allNamespaces)
}

// describer is describe of v's kind: the object's metadata, its spec
// and status as YAML, then its events.
func (v *workloadView) describer() describer {
	return func(cmd *cobra.Command, g *globalOptions, name string) error {
		items, err := v.list(cmd, g, func(ns string) bool { return ns == orDefaultNS(g.namespace) }, name, labels.Everything())
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return notFoundIn(g, v.kind, g.namespace, name, store.ErrNotFound)
		}
		return describeWorkload(cmd.OutOrStdout(), items[0])
	}
}

func describeWorkload(w io.Writer, it workloadItem) error {
	m := it.obj.Meta
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	p := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	p("Name", m.Name)
	p("Namespace", m.NamespaceOrDefault())
	p("CreationTimestamp", it.obj.Created.Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	p("Labels", kv(m.Labels))
	p("Annotations", kv(m.Annotations))
	for _, o := range m.OwnerReferences {
		p("Controlled By", o.Kind+"/"+o.Name)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	obj, err := objectWithStatus(it)
	if err != nil {
		return err
	}
	for _, part := range []string{"spec", "status"} {
		b, err := yaml.Marshal(obj.(map[string]any)[part])
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s%s:\n", strings.ToUpper(part[:1]), part[1:])
		for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	return nil
}

func orDefaultNS(ns string) string {
	if ns == "" {
		return manifests.DefaultNamespace
	}
	return ns
}
