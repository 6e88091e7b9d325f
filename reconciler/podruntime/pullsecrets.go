package podruntime

import (
	"errors"
	"fmt"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// PullSecrets reads the credentials of a pod's imagePullSecrets, in their
// order, as the kubelet builds its keyring from them. What cannot be used
// is skipped with a reason, never a failure: the kubelet pulls without a
// missing pull secret (warning FailedToRetrieveImagePullSecret) and
// ignores one of another type. The reasons name the Secret, never a value.
func PullSecrets(cfg ConfigStore, namespace string, refs []manifests.LocalObjectReference) (creds []dockerx.RegistryCredential, skipped []string) {
	for _, ref := range refs {
		if ref.Name == "" {
			skipped = append(skipped, "an imagePullSecrets entry has no name")
			continue
		}
		source := "secret " + namespace + "/" + ref.Name
		if cfg == nil {
			skipped = append(skipped, source+": not found")
			continue
		}
		s, err := cfg.LookupSecret(namespace, ref.Name)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				skipped = append(skipped, source+": not found")
			} else {
				skipped = append(skipped, fmt.Sprintf("%s: cannot read it: %v", source, err))
			}
			continue
		}
		var got []dockerx.RegistryCredential
		switch s.Type {
		case manifests.SecretTypeDockerConfigJSON:
			got, err = dockerx.ParseDockerConfigJSON(s.Data[manifests.DockerConfigJSONKey], source)
		case manifests.SecretTypeDockercfg:
			got, err = dockerx.ParseDockercfg(s.Data[dockercfgKey], source)
		default:
			skipped = append(skipped, fmt.Sprintf("%s: of type %q, not %s", source, s.Type, manifests.SecretTypeDockerConfigJSON))
			continue
		}
		if err != nil {
			skipped = append(skipped, err.Error())
			continue
		}
		creds = append(creds, got...)
	}
	return creds, skipped
}

// dockercfgKey is the key of a legacy kubernetes.io/dockercfg Secret.
const dockercfgKey = ".dockercfg"
