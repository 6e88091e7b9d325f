package podruntime

import (
	"context"
	"fmt"
	"time"

	"github.com/dockctl/dockctl/dockerx"
)

// Background creates (SyncInput.CreateInBackground). A create and a
// start cost the engine about a second under load; a Sync that waits for
// them holds its owner's key, so that the pods finishing meanwhile (a
// Job's completions) wait for the whole batch before they are replaced.
// Kubernetes' controllers do not wait for their pods to start: a pod
// created is an API write, the kubelet starts it, and the controller's
// expectations (pkg/controller/controller_utils.go) count the creates it
// has asked for until its informer shows them. Here the runtime is that
// kubelet: a Sync hands its missing pods of one container to a goroutine
// and returns, and until a list begun after a create ended shows it, the
// pod is the owner's as created (SyncResult.Creating: Pending), never
// created again nor removed as unwanted. A failed one queues the owner
// (RuntimeConfig.Created); a pod made is told by its start event.

// bgCreate is one pod of one container created and started in the
// background, as its owner's memory keeps it.
type bgCreate struct {
	spec PodSpec
	name string // its container's name
	at   time.Time
	req  dockerx.CreateRequest
	// Set once it ended: the container made (nil: none), the start's
	// answer, or why none was made.
	done      bool
	c         *dockerx.Container
	startErr  error
	createErr error
	// listed: a list of the owner's containers began after it ended, so
	// that the list shows what it made (Listing).
	listed bool
	// cancelled: the owner deleted the pod while it was being created
	// (CancelCreates): not made if not begun, else removed once listed.
	cancelled bool
}

// CreatingPod is a pod whose create runs in the background and that no
// list has shown yet: the owner counts it as created (Kubernetes counts
// a pod it created as active at once), Pending.
type CreatingPod struct {
	Spec   PodSpec
	Status PodStatus
	// Cancelled: its owner deleted it while it was being created
	// (CancelCreates): not made, or removed once listed; the owner sees
	// it terminating, as Kubernetes shows a deleted pod until it is gone.
	Cancelled bool
}

// Listing is called by a sync just before it lists an owner's
// containers: the stops (Stopper.Listing) and the background creates that
// ended before it are reflected in that list.
func (r *Runtime) Listing(key string) {
	r.stopper.Listing(key)
	r.memory.mu.Lock()
	defer r.memory.mu.Unlock()
	for _, bc := range r.memory.creates[key] {
		if bc.done {
			bc.listed = true
		}
	}
}

// CancelCreates cancels the owner's background creates of the pods named
// (all of them when names is nil): one not begun is not made, one begun
// is removed once a list shows it.
func (r *Runtime) CancelCreates(key string, names []string) {
	r.memory.mu.Lock()
	defer r.memory.mu.Unlock()
	drop := map[string]bool{}
	for _, n := range names {
		drop[n] = true
	}
	for _, bc := range r.memory.creates[key] {
		if names == nil || drop[bc.spec.Name] {
			bc.cancelled = true
		}
	}
}

// settleCreates takes the owner's background creates that a list shows
// (listed) out of its memory: each start is recorded in states as a
// create of Sync's own would have been, and a cancelled one is returned
// to be removed. It returns the creates still in flight, by container
// name, the names of the cancelled ones listed, and the failures.
func (r *Runtime) settleCreates(key string, states map[string]*ContainerState) (inFlight map[string]*bgCreate, cancelled map[string]bool, errs []error) {
	r.memory.mu.Lock()
	defer r.memory.mu.Unlock()
	inFlight = map[string]*bgCreate{}
	for name, bc := range r.memory.creates[key] {
		if !bc.done || !bc.listed {
			inFlight[name] = bc
			continue
		}
		delete(r.memory.creates[key], name)
		if bc.cancelled {
			if cancelled == nil {
				cancelled = map[string]bool{}
			}
			cancelled[name] = true
		}
		switch {
		case bc.createErr != nil:
			errs = append(errs, fmt.Errorf("pod %s: %w", bc.spec.Name, bc.createErr))
		case bc.c != nil:
			if err := r.started(states, bc.c, bc.at, false, bc.startErr); err != nil {
				errs = append(errs, fmt.Errorf("pod %s: %w", bc.spec.Name, err))
			}
		}
	}
	if len(r.memory.creates[key]) == 0 {
		delete(r.memory.creates, key)
	}
	return inFlight, cancelled, errs
}

// hasCreates reports whether the owner has background creates its memory
// keeps (it is not forgotten while it has).
func (m *syncMemory) hasCreates(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.creates[key]) > 0
}

// createInBackground hands the pass's missing pods of one container to a
// goroutine that creates and starts them with slow start, from the window
// the owner's last creates reached, as createPods does; the owner's
// memory keeps them until a list shows them (settleCreates), and each
// failure queues the owner (RuntimeConfig.Created). What a
// create is made of (its environment from ConfigMaps and Secrets) is
// resolved here, in the Sync: the first pod that cannot be made ends the
// pass's creates, with its error, as createPods does.
func (r *Runtime) createInBackground(ctx context.Context, d SyncDocker, in SyncInput, creates []podCreate) error {
	var bcs []*bgCreate
	var failed error
	for _, pc := range creates {
		req, err := r.createRequest(in, pc.spec, pc.name)
		if err != nil {
			failed = fmt.Errorf("pod %s: %w", pc.spec.Name, err)
			break
		}
		bcs = append(bcs, &bgCreate{spec: *pc.spec, name: pc.name, at: in.Now, req: req})
	}
	if len(bcs) == 0 {
		return failed
	}
	r.memory.mu.Lock()
	if r.memory.creates == nil {
		r.memory.creates = map[string]map[string]*bgCreate{}
	}
	if r.memory.creates[in.Key] == nil {
		r.memory.creates[in.Key] = map[string]*bgCreate{}
	}
	for _, bc := range bcs {
		r.memory.creates[in.Key][bc.name] = bc
	}
	r.memory.mu.Unlock()
	key, window := in.Key, r.memory.window(in.Key)
	started := r.starting.begin(len(bcs))
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		defer started()
		launched := map[*bgCreate]bool{}
		// The first create that succeeds opens the window (OpenStart):
		// the rest of a first wave are created while it starts.
		end := func(bc *bgCreate, c *dockerx.Container, createErr, startErr error) {
			r.memory.mu.Lock()
			bc.done, bc.c, bc.createErr, bc.startErr = true, c, createErr, startErr
			r.memory.mu.Unlock()
			// A failure queues the owner; a success is told by the
			// container's own start event, and a sync the owner gets
			// meanwhile counts the pod as being created: a second sync
			// per create would cost a list and a status write each.
			err := createErr
			if err == nil {
				err = startErr
			}
			if err != nil && r.created != nil {
				r.created(key, err)
			}
		}
		made := map[*bgCreate]*dockerx.Container{}
		errs, reached := OpenStart(bcs, MaxCreatesInFlight, window, func(bc *bgCreate) error {
			r.memory.mu.Lock()
			launched[bc] = true
			skip := bc.cancelled
			r.memory.mu.Unlock()
			if skip {
				end(bc, nil, nil, nil)
				return nil
			}
			c, err := createContainer(ctx, d, bc.req, bc.at)
			if err != nil {
				end(bc, nil, err, nil)
				// A refused create ends the batch's launches, as it
				// ends a pass's creates.
				return err
			}
			r.memory.mu.Lock()
			made[bc] = c
			r.memory.mu.Unlock()
			return nil
		}, func(bc *bgCreate) {
			r.memory.mu.Lock()
			c := made[bc]
			r.memory.mu.Unlock()
			if c == nil {
				return
			}
			end(bc, c, nil, d.StartContainer(ctx, c.ID))
		})
		if len(errs) > 0 {
			reached = 1
		}
		r.memory.setWindow(key, reached)
		// Those SlowStart did not launch (after a failure) end too, not
		// made: their owner decides again.
		r.memory.mu.Lock()
		left := false
		for _, bc := range bcs {
			if !launched[bc] {
				bc.done, left = true, true
			}
		}
		r.memory.mu.Unlock()
		if left && r.created != nil {
			r.created(key, errs[0])
		}
	}()
	return failed
}

// createContainer creates the container req asks for and returns it,
// without touching the owner's memory of its containers: createPod
// records its start at once, a background create when a Sync settles it
// (a Sync of the owner may run meanwhile).
func createContainer(ctx context.Context, d SyncDocker, req dockerx.CreateRequest, now time.Time) (*dockerx.Container, error) {
	id, err := d.CreateContainer(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", req.Name, err)
	}
	return &dockerx.Container{ID: id, Name: req.Name, TemplateHash: req.TemplateHash, State: dockerx.StateCreated, Created: now}, nil
}
