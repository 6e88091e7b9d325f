package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/dockctl/dockctl/dockerx"
)

// dockerAPI is a minimal Docker Engine API on a unix socket, for running the
// real commands (and the real controller, in a child process) end to end
// through the real Docker client, flags and output included, without a
// Docker daemon: ping, version, info (the host's name and capacity), events (the create, start, die and
// destroy of its containers, unfiltered),
// container list, create, start, remove, inspect (state and start time), logs and stats (one
// sample pair, as stream=false answers), image inspect, and networks (list, inspect, create, connect:
// no addresses, only which container is on which). It records every create, so a test sees the configuration the
// command sent, as Docker would receive it. It is the only fake Engine API
// of the command tests; startFakeDaemon points the environment at it.
type dockerAPI struct {
	t      testing.TB
	host   string // DOCKER_HOST value
	mu     sync.Mutex
	images map[string]bool
	ctrs   map[string]*fakeCtr
	next   int
	// creates are the create requests received, in order.
	creates []container.CreateRequest
	// logQueries are the query strings of the logs requests.
	logQueries []string
	// lists counts the container list requests answered.
	lists int
	// statsCalls are the stats requests: the container's name (as the
	// request named it when it is unknown), "?" and the query string.
	statsCalls []string
	// networks by name; the default bridge always exists.
	networks map[string]*network.Inspect
	// subs are the open /events streams.
	subs map[chan events.Message]bool
	// execs by ID; exec runs each (fakeExec).
	execs map[string]*fakeExecState
	exec  fakeExec
	// onRemove, when set (setOnRemove), runs after a container named
	// name is removed, before the answer.
	onRemove func(name string)
}

type fakeCtr struct {
	summary container.Summary
	logs    []logLine
	stats   fakeStats
	// files are the container's filesystem for the archive endpoints
	// (cp): by absolute path, a directory's entry ending the path with
	// nothing (dirs holds it). archive, when set, is what a GET of any
	// path answers, as it is (a test's crafted tar).
	files   map[string][]byte
	dirs    map[string]bool
	archive []byte
}

// fakeStats is the usage the stats endpoint reports for a container: CPU
// over its one-second window in nanocores, its working set, and the
// inactive file cache its memory usage includes on top.
type fakeStats struct {
	nanoCores, workingSet, inactiveFile uint64
}

// logLine is one line of a container's log, on stdout (1) or stderr (2).
type logLine struct {
	stream byte
	text   string
}

// The Engine the fake claims to be, as `dockctl version` prints it.
const (
	fakeEngineVersion = "20.10.0-fake"
	fakeAPIVersion    = "1.41"
	fakeHostName      = "fakehost" // its Info's Name
)

// startFakeDaemon starts the fake and points DOCKER_HOST (and the client's
// other variables) at it for the test.
func startFakeDaemon(t testing.TB) *dockerAPI {
	t.Helper()
	d := startDockerAPI(t)
	t.Setenv("DOCKER_HOST", d.host)
	t.Setenv("DOCKER_API_VERSION", "")
	t.Setenv("DOCKER_TLS_VERIFY", "")
	t.Setenv("DOCKER_CERT_PATH", "")
	return d
}

func startDockerAPI(t testing.TB, images ...string) *dockerAPI {
	t.Helper()
	// Short: a unix socket path must fit ~100 bytes.
	dir, err := os.MkdirTemp("", "dapi-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	d := &dockerAPI{t: t, host: "unix://" + sock, images: map[string]bool{}, ctrs: map[string]*fakeCtr{}, execs: map[string]*fakeExecState{},
		networks: map[string]*network.Inspect{"bridge": {ID: fmt.Sprintf("%064x", 0xb), Name: "bridge",
			IPAM: network.IPAM{Config: []network.IPAMConfig{{Subnet: "172.17.0.0/16"}}}}}}
	for _, img := range images {
		d.images[img] = true
	}
	srv := &http.Server{Handler: http.HandlerFunc(d.serve)}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return d
}

var apiVersionPrefix = regexp.MustCompile(`^/v[0-9]+\.[0-9]+`)

func (d *dockerAPI) serve(w http.ResponseWriter, r *http.Request) {
	path := apiVersionPrefix.ReplaceAllString(r.URL.Path, "")
	w.Header().Set("API-Version", fakeAPIVersion)
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case path == "/_ping":
		w.Write([]byte("OK"))
	case path == "/version":
		writeJSON(w, 200, map[string]string{"Version": fakeEngineVersion, "ApiVersion": fakeAPIVersion, "Os": "linux", "Arch": "amd64"})
	case path == "/info":
		writeJSON(w, 200, map[string]any{"LoggingDriver": "json-file", "Name": fakeHostName, "NCPU": 2, "MemTotal": 4 << 30})
	case path == "/events":
		d.streamEvents(w, r)
	case path == "/containers/json":
		d.list(w, r)
	case path == "/containers/create" && r.Method == http.MethodPost:
		d.create(w, r)
	case len(parts) == 3 && parts[0] == "containers" && parts[2] == "start":
		d.setState(w, parts[1], "running", "Up 1 second")
	case len(parts) == 3 && parts[0] == "containers" && parts[2] == "stop":
		d.setState(w, parts[1], "exited", "Exited (0) 1 second ago")
	case len(parts) == 3 && parts[0] == "containers" && parts[2] == "logs":
		d.logs(w, r, parts[1])
	case len(parts) == 3 && parts[0] == "containers" && parts[2] == "json":
		d.inspect(w, parts[1])
	case len(parts) == 3 && parts[0] == "containers" && parts[2] == "stats":
		d.stats(w, r, parts[1])
	case len(parts) == 3 && parts[0] == "containers" && parts[2] == "archive":
		d.archive(w, r, parts[1])
	case len(parts) == 2 && parts[0] == "containers" && r.Method == http.MethodDelete:
		d.mu.Lock()
		c, ok := d.ctrs[parts[1]]
		delete(d.ctrs, parts[1])
		if ok {
			d.emit(events.ActionDestroy, c)
		}
		onRemove := d.onRemove
		d.mu.Unlock()
		if !ok {
			writeJSON(w, 404, map[string]string{"message": "No such container: " + parts[1]})
			return
		}
		if onRemove != nil {
			onRemove(strings.TrimPrefix(c.summary.Names[0], "/"))
		}
		w.WriteHeader(204)
	case path == "/images/json":
		writeJSON(w, 200, []any{})
	case path == "/volumes" && r.Method == http.MethodGet:
		writeJSON(w, 200, map[string]any{"Volumes": []any{}})
	case strings.HasPrefix(path, "/images/") && strings.HasSuffix(path, "/json"):
		ref := strings.TrimSuffix(strings.TrimPrefix(path, "/images/"), "/json")
		d.mu.Lock()
		ok := d.images[ref]
		d.mu.Unlock()
		if !ok {
			writeJSON(w, 404, map[string]string{"message": "No such image: " + ref})
			return
		}
		writeJSON(w, 200, map[string]any{"Id": "sha256:" + strings.Repeat("1", 64), "RepoTags": []string{ref}})
	case path == "/networks" && r.Method == http.MethodGet:
		d.mu.Lock()
		out := []network.Inspect{}
		for _, n := range d.networks {
			out = append(out, *n)
		}
		d.mu.Unlock()
		writeJSON(w, 200, out)
	case path == "/networks/create" && r.Method == http.MethodPost:
		d.createNetwork(w, r)
	case len(parts) == 2 && parts[0] == "networks" && r.Method == http.MethodGet:
		d.mu.Lock()
		n := d.networks[parts[1]]
		d.mu.Unlock()
		if n == nil {
			writeJSON(w, 404, map[string]string{"message": "network " + parts[1] + " not found"})
			return
		}
		writeJSON(w, 200, n)
	case len(parts) == 2 && parts[0] == "networks" && r.Method == http.MethodDelete:
		d.removeNetwork(w, parts[1])
	case len(parts) == 3 && parts[0] == "networks" && parts[2] == "connect" && r.Method == http.MethodPost:
		d.connect(w, r, parts[1])
	case path == "/images/create":
		writeJSON(w, 404, map[string]string{"message": "pull access denied: no registry here"})
	case len(parts) == 3 && parts[0] == "containers" && parts[2] == "exec" && r.Method == http.MethodPost:
		d.execCreate(w, r, parts[1])
	case len(parts) == 3 && parts[0] == "exec" && parts[2] == "start" && r.Method == http.MethodPost:
		d.execStart(w, r, parts[1])
	case len(parts) == 3 && parts[0] == "exec" && parts[2] == "json":
		d.execInspect(w, parts[1])
	case len(parts) == 3 && parts[0] == "exec" && parts[2] == "resize" && r.Method == http.MethodPost:
		w.WriteHeader(200)
	default:
		writeJSON(w, 404, map[string]string{"message": "fake docker: not implemented: " + r.Method + " " + path})
	}
}

// removeNetwork removes a network by ID or name, refused (as Docker
// refuses one with active endpoints) while a container of the network's
// instance is left: the fake does not follow endpoints, and a test's
// containers of an instance are on its network.
func (d *dockerAPI) removeNetwork(w http.ResponseWriter, ref string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, n := range d.networks {
		if n.ID != ref && name != ref {
			continue
		}
		for _, c := range d.ctrs {
			if inst := n.Labels[dockerx.LabelInstance]; inst != "" && c.summary.Labels[dockerx.LabelInstance] == inst {
				writeJSON(w, 403, map[string]string{"message": "error while removing network: network " + name + " id " + n.ID + " has active endpoints"})
				return
			}
		}
		delete(d.networks, name)
		w.WriteHeader(204)
		return
	}
	writeJSON(w, 404, map[string]string{"message": "network " + ref + " not found"})
}

// streamEvents sends the container events as they happen, until the
// client goes.
func (d *dockerAPI) streamEvents(w http.ResponseWriter, r *http.Request) {
	ch := make(chan events.Message, 64)
	d.mu.Lock()
	if d.subs == nil {
		d.subs = map[chan events.Message]bool{}
	}
	d.subs[ch] = true
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.subs, ch)
		d.mu.Unlock()
	}()
	w.WriteHeader(200)
	w.(http.Flusher).Flush()
	enc := json.NewEncoder(w)
	for {
		select {
		case m := <-ch:
			if enc.Encode(m) != nil {
				return
			}
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// emit sends an event about c to every stream (the caller holds d.mu); a
// stream too slow to take it misses it, as a broken one would.
func (d *dockerAPI) emit(action events.Action, c *fakeCtr) {
	attrs := maps.Clone(c.summary.Labels)
	if attrs == nil {
		attrs = map[string]string{}
	}
	attrs["name"] = strings.TrimPrefix(c.summary.Names[0], "/")
	now := time.Now()
	m := events.Message{Type: events.ContainerEventType, Action: action, Actor: events.Actor{ID: c.summary.ID, Attributes: attrs},
		Time: now.Unix(), TimeNano: now.UnixNano()}
	for ch := range d.subs {
		select {
		case ch <- m:
		default:
		}
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (d *dockerAPI) list(w http.ResponseWriter, r *http.Request) {
	args, err := filters.FromJSON(r.URL.Query().Get("filters"))
	if err != nil {
		writeJSON(w, 400, map[string]string{"message": err.Error()})
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lists++
	out := []container.Summary{}
	for _, c := range d.ctrs {
		if args.Contains("label") && !args.MatchKVList("label", c.summary.Labels) {
			continue
		}
		out = append(out, c.summary)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Names[0] < out[j].Names[0] })
	writeJSON(w, 200, out)
}

func (d *dockerAPI) create(w http.ResponseWriter, r *http.Request) {
	var req container.CreateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, 400, map[string]string{"message": err.Error()})
		return
	}
	name := r.URL.Query().Get("name")
	d.mu.Lock()
	defer d.mu.Unlock()
	d.creates = append(d.creates, req)
	if !d.images[req.Image] {
		writeJSON(w, 404, map[string]string{"message": "No such image: " + req.Image})
		return
	}
	for _, c := range d.ctrs {
		if c.summary.Names[0] == "/"+name {
			writeJSON(w, 409, map[string]string{"message": "Conflict. The container name \"/" + name + "\" is already in use"})
			return
		}
	}
	nets := map[string]*network.EndpointSettings{}
	switch mode := container.NetworkMode(""); {
	case req.HostConfig != nil:
		mode = req.HostConfig.NetworkMode
		if mode == "" || mode.IsDefault() {
			mode = "bridge"
		}
		if !mode.IsContainer() && !mode.IsNone() {
			if d.networks[string(mode)] == nil && mode.IsUserDefined() {
				writeJSON(w, 404, map[string]string{"message": "network " + string(mode) + " not found"})
				return
			}
			nets[string(mode)] = &network.EndpointSettings{}
		}
	default:
		nets["bridge"] = &network.EndpointSettings{}
	}
	d.next++
	id := fmt.Sprintf("%064x", d.next)
	d.ctrs[id] = &fakeCtr{summary: container.Summary{
		ID: id, Names: []string{"/" + name}, Image: req.Image, Labels: req.Labels,
		State: "created", Status: "Created", Created: time.Now().Unix(),
		NetworkSettings: &container.NetworkSettingsSummary{Networks: nets},
	}}
	d.emit(events.ActionCreate, d.ctrs[id])
	writeJSON(w, 201, container.CreateResponse{ID: id, Warnings: []string{}})
}

// createNetwork makes a network as asked, refusing a name in use.
func (d *dockerAPI) createNetwork(w http.ResponseWriter, r *http.Request) {
	var req network.CreateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, 400, map[string]string{"message": err.Error()})
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.networks[req.Name] != nil {
		writeJSON(w, 409, map[string]string{"message": "network with name " + req.Name + " already exists"})
		return
	}
	d.next++
	n := &network.Inspect{ID: fmt.Sprintf("%064x", d.next), Name: req.Name, Labels: req.Labels, Driver: req.Driver}
	if req.IPAM != nil {
		n.IPAM = *req.IPAM
	}
	d.networks[req.Name] = n
	writeJSON(w, 201, network.CreateResponse{ID: n.ID})
}

// connect puts a container on a network.
func (d *dockerAPI) connect(w http.ResponseWriter, r *http.Request, name string) {
	var req network.ConnectOptions
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, 400, map[string]string{"message": err.Error()})
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.find(req.Container)
	switch {
	case d.networks[name] == nil:
		writeJSON(w, 404, map[string]string{"message": "network " + name + " not found"})
		return
	case c == nil:
		writeJSON(w, 404, map[string]string{"message": "No such container: " + req.Container})
		return
	}
	if c.summary.NetworkSettings == nil {
		c.summary.NetworkSettings = &container.NetworkSettingsSummary{Networks: map[string]*network.EndpointSettings{}}
	}
	c.summary.NetworkSettings.Networks[name] = &network.EndpointSettings{}
	w.WriteHeader(200)
}

// add puts a container in, as if created and started by someone.
func (d *dockerAPI) add(name, state string, labels map[string]string, logs ...string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next++
	id := fmt.Sprintf("%064x", d.next)
	status := "Up 1 minute"
	switch state {
	case "running":
	case "paused":
		status = "Up 1 minute (Paused)"
	default:
		status = "Exited (0) 1 minute ago"
	}
	c := &fakeCtr{summary: container.Summary{
		ID: id, Names: []string{"/" + name}, Image: "img:1", Labels: labels,
		State: state, Status: status, Created: time.Now().Add(-time.Minute).Unix(),
	}}
	for _, l := range logs {
		c.logs = append(c.logs, logLine{1, l})
	}
	d.ctrs[id] = c
	d.emit(events.ActionStart, c)
	return id
}

// addContainer puts in a running container of deployment dep (template
// hash "abc") of instance, with extra labels (which win).
func (d *dockerAPI) addContainer(name, instance, dep string, labels map[string]string) string {
	all := map[string]string{
		"io.dockctl.instance": instance, "io.dockctl.deployment": dep, "io.dockctl.template-hash": "abc",
	}
	maps.Copy(all, labels)
	return d.add(name, "running", all)
}

// setLogs replaces the log of the container named name.
func (d *dockerAPI) setLogs(name string, lines ...logLine) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.find(name)
	if c == nil {
		d.t.Fatalf("fake docker: no container %s", name)
	}
	c.logs = lines
}

// tails returns the tail parameter of each logs request, in order.
func (d *dockerAPI) tails() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, q := range d.logQueries {
		v, _ := url.ParseQuery(q)
		out = append(out, v.Get("tail"))
	}
	return out
}

func (d *dockerAPI) find(id string) *fakeCtr {
	if c, ok := d.ctrs[id]; ok {
		return c
	}
	for _, c := range d.ctrs {
		if c.summary.Names[0] == "/"+id || strings.HasPrefix(c.summary.ID, id) {
			return c
		}
	}
	return nil
}

func (d *dockerAPI) setState(w http.ResponseWriter, id, state, status string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.find(id)
	if c == nil {
		writeJSON(w, 404, map[string]string{"message": "No such container: " + id})
		return
	}
	c.summary.State, c.summary.Status = state, status
	if state == "running" {
		d.emit(events.ActionStart, c)
	} else {
		d.emit(events.ActionDie, c)
	}
	w.WriteHeader(204)
}

func (d *dockerAPI) inspect(w http.ResponseWriter, id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.find(id)
	if c == nil {
		writeJSON(w, 404, map[string]string{"message": "No such container: " + id})
		return
	}
	started := "0001-01-01T00:00:00Z" // never started, as Docker says it
	if c.summary.State != "created" {
		started = time.Unix(c.summary.Created, 0).UTC().Format(time.RFC3339Nano)
	}
	writeJSON(w, 200, map[string]any{
		"Id": c.summary.ID, "Name": c.summary.Names[0], "Image": c.summary.Image,
		// A restarting container is Running as well, as Docker reports it
		// (its State.SetRestarting), between two runs of a restart policy.
		"State": map[string]any{"Status": c.summary.State, "Running": c.summary.State == "running" || c.summary.State == "restarting",
			"Restarting": c.summary.State == "restarting", "StartedAt": started},
		"Config": map[string]any{"Labels": c.summary.Labels, "Image": c.summary.Image},
	})
}

// logs answers in Docker's multiplexed format (no TTY): each line framed
// with an 8-byte header (stream, 3 zero bytes, big-endian length).
func (d *dockerAPI) logs(w http.ResponseWriter, r *http.Request, id string) {
	d.mu.Lock()
	c := d.find(id)
	d.logQueries = append(d.logQueries, r.URL.RawQuery)
	var lines []logLine
	if c != nil {
		lines = append(lines, c.logs...)
	}
	d.mu.Unlock()
	if c == nil {
		writeJSON(w, 404, map[string]string{"message": "No such container: " + id})
		return
	}
	if tail := r.URL.Query().Get("tail"); tail != "" && tail != "all" {
		var n int
		fmt.Sscan(tail, &n)
		if n < len(lines) {
			lines = lines[len(lines)-n:]
		}
	}
	w.Header().Set("Content-Type", "application/vnd.docker.multiplexed-stream")
	w.WriteHeader(200)
	for _, l := range lines {
		frame := make([]byte, 8, 8+len(l.text)+1)
		frame[0] = l.stream
		binary.BigEndian.PutUint32(frame[4:], uint32(len(l.text)+1))
		frame = append(frame, l.text+"\n"...)
		w.Write(frame)
	}
}

// setStats sets the usage the stats endpoint reports for the container
// named name.
func (d *dockerAPI) setStats(name string, s fakeStats) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.find(name)
	if c == nil {
		d.t.Fatalf("fake docker: no container %s", name)
	}
	c.stats = s
}

// stats answers as Docker does with stream=false: the second of two
// samples a second apart, cgroup v1 memory figures; for a container that is
// not running, empty stats.
func (d *dockerAPI) stats(w http.ResponseWriter, r *http.Request, id string) {
	d.mu.Lock()
	c := d.find(id)
	var st fakeStats
	state, name := "", "/"+id
	if c != nil {
		st, state, name = c.stats, c.summary.State, c.summary.Names[0]
	}
	d.statsCalls = append(d.statsCalls, strings.TrimPrefix(name, "/")+"?"+r.URL.RawQuery)
	d.mu.Unlock()
	if c == nil {
		writeJSON(w, 404, map[string]string{"message": "No such container: " + id})
		return
	}
	resp := container.StatsResponse{Name: name, ID: id}
	if state == "running" || state == "paused" {
		const before = 7_000_000_000 // ns of CPU used before the first sample
		resp.PreRead = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		resp.Read = resp.PreRead.Add(time.Second)
		resp.PreCPUStats.CPUUsage.TotalUsage = before
		resp.CPUStats.CPUUsage.TotalUsage = before + st.nanoCores // over one second
		resp.MemoryStats.Usage = st.workingSet + st.inactiveFile
		resp.MemoryStats.Stats = map[string]uint64{"total_inactive_file": st.inactiveFile, "inactive_file": st.inactiveFile, "total_rss": st.workingSet}
	}
	writeJSON(w, 200, resp)
}

// createsSnapshot returns the create requests received so far.
func (d *dockerAPI) createsSnapshot() []container.CreateRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]container.CreateRequest(nil), d.creates...)
}

// running counts running containers carrying label k=v.
func (d *dockerAPI) running(k, v string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.ctrs {
		if c.summary.State == "running" && c.summary.Labels[k] == v {
			n++
		}
	}
	return n
}

// fakeExec is what an exec's command does in the container named name:
// startErr, when not "", is the runtime's reason it cannot start (Docker
// then sends it as the output, and gives the exec exit code 126 and no
// process); else body runs it, reading stdin (empty unless attached) and
// returning its exit code.
type fakeExec func(name string, cmd []string) (startErr string, body func(stdin io.Reader, stdout, stderr io.Writer) int)

type fakeExecState struct {
	ctr      string // the container's name
	opts     container.ExecOptions
	running  bool
	pid      int
	exitCode *int
}

// execCreate answers an exec's creation as Docker does: 404 for no such
// container, 409 for one that is not running.
func (d *dockerAPI) execCreate(w http.ResponseWriter, r *http.Request, id string) {
	var o container.ExecOptions
	if err := json.NewDecoder(r.Body).Decode(&o); err != nil {
		writeJSON(w, 400, map[string]string{"message": err.Error()})
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.find(id)
	switch {
	case c == nil:
		writeJSON(w, 404, map[string]string{"message": "No such container: " + id})
		return
	case c.summary.State != "running":
		writeJSON(w, 409, map[string]string{"message": "Container " + c.summary.ID + " is not running"})
		return
	}
	d.next++
	execID := fmt.Sprintf("e%063x", d.next)
	d.execs[execID] = &fakeExecState{ctr: strings.TrimPrefix(c.summary.Names[0], "/"), opts: o}
	writeJSON(w, 201, container.ExecCreateResponse{ID: execID})
}

// setExec sets what the execs run, under the lock the server reads it
// with (a test sets it while a command may be running).
func (d *dockerAPI) setExec(f fakeExec) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.exec = f
}

// execStart hijacks the connection, as Docker's attached exec start
// does, and runs the command over it: stdin from the client (to its
// half-close), output multiplexed unless the exec has a TTY.
func (d *dockerAPI) execStart(w http.ResponseWriter, r *http.Request, execID string) {
	d.mu.Lock()
	e := d.execs[execID]
	run := d.exec
	d.mu.Unlock()
	if e == nil {
		writeJSON(w, 404, map[string]string{"message": "No such exec instance: " + execID})
		return
	}
	// Read before the hijack, which leaves the body unusable.
	var start container.ExecStartOptions
	if err := json.NewDecoder(r.Body).Decode(&start); err != nil {
		writeJSON(w, 400, map[string]string{"message": err.Error()})
		return
	}
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		d.t.Errorf("fake docker: hijack: %v", err)
		return
	}
	defer conn.Close()
	fmt.Fprint(conn, "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
	stdout, stderr := io.Writer(conn), io.Writer(conn)
	if !e.opts.Tty {
		stdout, stderr = stdcopy.NewStdWriter(conn, stdcopy.Stdout), stdcopy.NewStdWriter(conn, stdcopy.Stderr)
	}
	startErr, body := "", func(io.Reader, io.Writer, io.Writer) int { return 0 }
	if run != nil {
		startErr, body = run(e.ctr, e.opts.Cmd)
	}
	if startErr != "" {
		code := 126
		d.mu.Lock()
		e.exitCode = &code
		d.mu.Unlock()
		fmt.Fprint(stdout, startErr+"\r\n")
		return
	}
	d.mu.Lock()
	e.running, e.pid = true, 4242
	d.mu.Unlock()
	var stdin io.Reader = strings.NewReader("")
	if e.opts.AttachStdin {
		stdin = buf
	}
	code := body(stdin, stdout, stderr)
	d.mu.Lock()
	e.running, e.exitCode = false, &code
	d.mu.Unlock()
}

func (d *dockerAPI) execInspect(w http.ResponseWriter, execID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.execs[execID]
	if e == nil {
		writeJSON(w, 404, map[string]string{"message": "No such exec instance: " + execID})
		return
	}
	writeJSON(w, 200, map[string]any{"ID": execID, "Running": e.running, "ExitCode": e.exitCode, "Pid": e.pid})
}

// execsOf returns the exec options received for the container named name.
func (d *dockerAPI) execsOf(name string) []container.ExecOptions {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []container.ExecOptions
	for _, e := range d.execs {
		if e.ctr == name {
			out = append(out, e.opts)
		}
	}
	return out
}

// callCounter stands between the commands and the fake Engine API and
// counts the requests by kind: what a command asks Docker, and how often.
type callCounter struct {
	mu     sync.Mutex
	counts map[string]int
	// gate, when set, holds each container list until it is closed: what
	// the list answers is Docker's state when the gate opens.
	gate chan struct{}
}

// countCalls puts a counter in front of d: DOCKER_HOST points at it for
// the test.
func countCalls(t *testing.T, d *dockerAPI) *callCounter {
	t.Helper()
	dir, err := os.MkdirTemp("", "cnt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "c.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	c := &callCounter{counts: map[string]int{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.add(r) == "list" {
			c.mu.Lock()
			gate := c.gate
			c.mu.Unlock()
			if gate != nil {
				<-gate
			}
		}
		d.serve(w, r)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	return c
}

// add counts r as "inspect", "list", "info" or its path, and says which.
func (c *callCounter) add(r *http.Request) string {
	path := apiVersionPrefix.ReplaceAllString(r.URL.Path, "")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	kind := path
	switch {
	case len(parts) == 3 && parts[0] == "containers" && parts[2] == "json":
		kind = "inspect"
	case path == "/containers/json":
		kind = "list"
	case path == "/info":
		kind = "info"
	}
	c.mu.Lock()
	c.counts[kind]++
	c.mu.Unlock()
	return kind
}

// hold makes the container lists wait until the function it returns is
// called.
func (c *callCounter) hold() (release func()) {
	gate := make(chan struct{})
	c.mu.Lock()
	c.gate = gate
	c.mu.Unlock()
	return sync.OnceFunc(func() {
		c.mu.Lock()
		c.gate = nil
		c.mu.Unlock()
		close(gate)
	})
}

func (c *callCounter) get(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[kind]
}

func (c *callCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = map[string]int{}
}

// stateOf is the state of the container named name ("" for none).
func (d *dockerAPI) stateOf(name string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.find(name); c != nil {
		return c.summary.State
	}
	return ""
}

// setStateOf sets the state of the container named name.
func (d *dockerAPI) setStateOf(name, state string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.find(name).summary.State = state
}

// setOnRemove sets what runs after each container removal.
func (d *dockerAPI) setOnRemove(f func(name string)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.onRemove = f
}
