package store

import (
	"time"
)

// sourcesFile is where the controller reports on its manifests
// directories: controller-owned, like the status files (WatchStatus
// reports it, Watch does not).
const sourcesFile = "manifests.json"

// SourceStatus is the controller's report on one manifests directory (or
// file) it applies (`dockctl controller --manifests`), for `dockctl get
// manifests`.
type SourceStatus struct {
	// Path is the path as the controller was given it; Manager is the
	// manager its objects record (DirectoryManager(Path)).
	Path    string `json:"path"`
	Manager string `json:"manager"`
	// Ready is true when the last sync applied the whole source; Reason
	// is a CamelCase word (Synced, InvalidManifests, Empty, Unreadable,
	// Conflict, ApplyFailed) and Message says what went wrong, if anything.
	Ready   bool   `json:"ready"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// Files and Objects are what the source held at the last sync;
	// Errors names the files that were refused (their objects kept).
	Files   int      `json:"files"`
	Objects int      `json:"objects"`
	Errors  []string `json:"errors,omitempty"`
	// LastSync is the last sync's time, LastSuccess the last Ready one's;
	// EmptySince is when the source was found empty or unreadable, nil
	// while it is neither.
	LastSync    time.Time  `json:"lastSync"`
	LastSuccess *time.Time `json:"lastSuccess,omitempty"`
	EmptySince  *time.Time `json:"emptySince,omitempty"`
}

type sourcesState struct {
	Version int            `json:"version"`
	Sources []SourceStatus `json:"sources"`
}

// ReadSourceStatus returns what the controller last reported on its
// manifests directories; nil when it never ran with any.
func (s *Store) ReadSourceStatus() ([]SourceStatus, error) {
	var st sourcesState
	if found, err := s.readState(sourcesFile, &st, &st.Version); !found || err != nil {
		return nil, err
	}
	return st.Sources, nil
}

// WriteSourceStatus replaces the report on the manifests directories.
func (s *Store) WriteSourceStatus(sources []SourceStatus) error {
	if s.readOnly {
		return ErrReadOnly
	}
	return s.transaction(func() error {
		return s.writeJSON(sourcesFile, sourcesState{Version: formatVersion, Sources: sources})
	})
}
