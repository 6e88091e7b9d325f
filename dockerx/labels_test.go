package dockerx

import (
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

func TestParseExitCode(t *testing.T) {
	for status, want := range map[string]int{
		"Exited (0) 3 seconds ago":      0,
		"Exited (1) 3 seconds ago":      1,
		"Exited (137) 2 minutes ago":    137,
		"Up 5 seconds":                  0,
		"Created":                       0,
		"Exited (garbage) 1 second ago": 0,
		"Exited (2":                     0,
	} {
		if got := parseExitCode(status); got != want {
			t.Errorf("parseExitCode(%q) = %d, want %d", status, got, want)
		}
	}
}

// TestReservedLabelsCoverOurs: every label dockctl puts on a container is
// one a template may not set (manifests.ReservedLabels), so that no template
// can make a container pose as a holder, a pod member, another owner's pod
// (a Deployment's pod labelled as a StatefulSet's, which that StatefulSet
// would then take and remove) or another incarnation's orphan.
func TestReservedLabelsCoverOurs(t *testing.T) {
	for _, k := range []string{LabelInstance, LabelDeployment, LabelTemplateHash, LabelRole, LabelPod, LabelPodUID, LabelContainer,
		LabelNamespace, LabelService, LabelConfigHash, LabelOwnerKind, LabelOwner, LabelOwnerUID, LabelHostname, LabelSubdomain,
		LabelClaim, LabelVersion} {
		if !manifests.ReservedLabels[k] {
			t.Errorf("%s is not reserved", k)
		}
	}
}
