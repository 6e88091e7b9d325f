package main

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// The imperative creates (create configmap|secret|deployment, expose,
// run) build the object kubectl's generator builds, with the API's own
// types so that --dry-run=client -o yaml prints what kubectl prints, then
// store it through the decoder and the store's Apply, as apply -f of that
// YAML would: validated as a file is, refused when it already exists (as
// kubectl create).

// createOutput is the flags every imperative create shares.
type createOutput struct {
	dryRun string
	output string
}

func (o *createOutput) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.dryRun, "dry-run", "none", "print without storing (none|client)")
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "client"
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "print the object: yaml, json or name (as kubectl; without -o: kind/NAME created)")
}

// parse reads o's --dry-run and -o: whether to store nothing, and the
// printer -o asks for (nil: kubectl's "kind/NAME created"), which create
// limits to yaml, json and name as kubectl's create does.
func (o *createOutput) parse() (dry bool, p *printer, err error) {
	if dry, err = parseDryRun(o.dryRun); err != nil {
		return false, nil, err
	}
	if o.output == "" {
		return dry, nil, nil
	}
	if p, err = newPrinter(printFlags{output: o.output}); err != nil {
		return false, nil, err
	}
	if p.format != "yaml" && p.format != "json" && p.format != "name" {
		return false, nil, fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: json,name,yaml", o.output)
	}
	return dry, p, nil
}

// createObject stores obj (a k8s.io/api object of kind, a CLI kind word)
// and prints it: as -o asks, else kubectl's "kind/NAME created".
func createObject(cmd *cobra.Command, g *globalOptions, o *createOutput, kind, name string, obj any) error {
	dry, p, err := o.parse()
	if err != nil {
		return err
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		return fmt.Errorf("%s/%s: %w", kind, name, err)
	}
	docs, err := manifests.Decode(kind+"/"+name, data)
	if err != nil {
		return err
	}
	b, err := g.bundleOf(docs)
	if err != nil {
		return err
	}
	// kubectl's --dry-run=client asks the server nothing: the object is
	// validated (above) and printed, the state directory not read.
	if !dry {
		if err := storeCreated(g, kind, b); err != nil {
			return err
		}
	}
	if p != nil {
		obj := obj
		return p.print(cmd.OutOrStdout(), &table{kind: apiResourceOf(kind).qualified(), rows: []row{{name: name, object: func() (any, error) { return obj, nil }}}}, true, false)
	}
	suffix := ""
	if dry {
		suffix = " (dry run)"
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s/%s created%s\n", kind, name, suffix)
	return err
}

// storeCreated stores b's objects, refused when one exists (kubectl
// create's AlreadyExists, not apply's "configured").
func storeCreated(g *globalOptions, kind string, b *bundle) error {
	st, err := g.openStore()
	if err != nil {
		return err
	}
	for _, ref := range b.Refs() {
		if rec, err := st.LookupObject(ref); err == nil && !rec.Deleted {
			return alreadyExists(kind, ref.Name)
		}
	}
	_, err = st.Apply(b.Bundle, store.ApplyOptions{Manager: store.ManagerApply})
	return err
}

// objectMeta is what kubectl's generators set: the name, and the
// namespace only when -n is given (kubectl's EnforceNamespace).
func (g *globalOptions) objectMeta(name string, labels map[string]string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Labels: labels}
	if g.nsExplicit() {
		m.Namespace = g.namespace
	}
	return m
}

// dataSources are --from-literal, --from-file and --from-env-file, as
// kubectl's create configmap and create secret generic read them.
type dataSources struct {
	literals, files, envFiles []string
}

func (d *dataSources) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&d.literals, "from-literal", nil, "a key and literal value (KEY=VALUE), repeatable")
	cmd.Flags().StringSliceVar(&d.files, "from-file", nil, "a file (key: its base name, or KEY=PATH) or a directory (each regular file in it), repeatable")
	cmd.Flags().StringSliceVar(&d.envFiles, "from-env-file", nil, "a file of KEY=VALUE lines (# comments; a KEY alone takes the value from the environment), repeatable")
}

// read returns the entries, in order, each key once; what of refers to
// names the object in kubectl's duplicate-key error.
func (d *dataSources) read(of string) (map[string][]byte, error) {
	out := map[string][]byte{}
	add := func(k string, v []byte) error {
		if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
			return fmt.Errorf("%q is not a valid key name: %s", k, strings.Join(errs, ";"))
		}
		if _, ok := out[k]; ok {
			return fmt.Errorf("cannot add key %s, another key by that name already exists in %s", k, of)
		}
		out[k] = v
		return nil
	}
	for _, l := range d.literals {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("invalid literal source %v, expected key=value", l)
		}
		if err := add(k, []byte(v)); err != nil {
			return nil, err
		}
	}
	for _, f := range d.files {
		key, path, named := strings.Cut(f, "=")
		if !named {
			key, path = "", f
		} else if key == "" || path == "" {
			return nil, fmt.Errorf("key names or file paths cannot be empty: %q", f)
		}
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("error reading %s: %w", path, err)
		}
		if fi.IsDir() {
			if named {
				return nil, fmt.Errorf("cannot give a key name for a directory path")
			}
			entries, err := os.ReadDir(path)
			if err != nil {
				return nil, fmt.Errorf("error listing files in %s: %w", path, err)
			}
			for _, e := range entries {
				if !e.Type().IsRegular() {
					continue
				}
				data, err := os.ReadFile(filepath.Join(path, e.Name()))
				if err != nil {
					return nil, err
				}
				if err := add(e.Name(), data); err != nil {
					return nil, err
				}
			}
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if key == "" {
			key = filepath.Base(path)
		}
		if err := add(key, data); err != nil {
			return nil, err
		}
	}
	for _, f := range d.envFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("error reading %s: %w", f, err)
		}
		env, err := parseEnvFile(f, data)
		if err != nil {
			return nil, err
		}
		for _, kv := range env {
			if err := add(kv[0], []byte(kv[1])); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// parseEnvFile reads KEY=VALUE lines as kubectl's --from-env-file: a
// leading BOM is dropped, blank lines and # comments skipped, leading
// space of a line trimmed, the value kept as written (no quotes
// removed), and a KEY without = takes its value from the environment.
func parseEnvFile(name string, data []byte) ([][2]string, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("env file %s contains invalid utf8 bytes", name)
	}
	var out [][2]string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimLeft(strings.TrimSuffix(line, "\r"), " \t")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			v = os.Getenv(k)
		}
		// kubectl's processEnvFileLine checks a key with IsEnvVarName,
		// not the relaxed rule Kubernetes 1.34 applies to env[].name: an
		// env file's key must also be a ConfigMap key, which the relaxed
		// rule does not ensure.
		if errs := validation.IsEnvVarName(k); len(errs) > 0 {
			return nil, fmt.Errorf("%q is not a valid key name: %s (%s line %d)", k, strings.Join(errs, ";"), name, i+1)
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

func newCreateConfigMapCommand(g *globalOptions) *cobra.Command {
	var (
		src dataSources
		out createOutput
	)
	cmd := &cobra.Command{
		Use:     "configmap NAME [--from-file=[key=]source] [--from-literal=key=value] [--from-env-file=source] [--dry-run=client] [-o yaml]",
		Aliases: []string{"cm"},
		Short:   "Create a ConfigMap from files, directories, env files or literal values",
		Example: `  # A ConfigMap of two literal values
  dockctl create configmap app --from-literal=LOG=debug --from-literal=PORT=8080

  # Of every file of a directory, each under its base name
  dockctl create configmap site --from-file=html/

  # Print it instead of storing it
  dockctl create configmap app --from-env-file=app.env --dry-run=client -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf(cmd, "exactly one NAME is required, got %d", len(args))
			}
			entries, err := src.read("Data for ConfigMap " + args[0])
			if err != nil {
				return err
			}
			cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: g.objectMeta(args[0], nil)}
			for k, v := range entries {
				// As kubectl: what is not UTF-8 goes to binaryData.
				if utf8.Valid(v) {
					if cm.Data == nil {
						cm.Data = map[string]string{}
					}
					cm.Data[k] = string(v)
				} else {
					if cm.BinaryData == nil {
						cm.BinaryData = map[string][]byte{}
					}
					cm.BinaryData[k] = v
				}
			}
			return createObject(cmd, g, &out, kindConfigMap, args[0], cm)
		},
	}
	src.addFlags(cmd)
	out.addFlags(cmd)
	return cmd
}

func newCreateSecretCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secret (generic|tls|docker-registry) NAME [flags]",
		Short: "Create a Secret: generic, tls or docker-registry",
		Example: `  # A Secret of a literal value
  dockctl create secret generic db --from-literal=password=s3cret

  # Registry credentials for imagePullSecrets
  dockctl create secret docker-registry regcred --docker-server=registry.example.com --docker-username=me --docker-password=$TOKEN`,
		RunE: subcommandsOnly(false),
	}
	cmd.AddCommand(newCreateSecretGenericCommand(g), newCreateSecretTLSCommand(g), newCreateSecretDockerRegistryCommand(g))
	return cmd
}

func secretObject(g *globalOptions, name string, typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: g.objectMeta(name, nil), Type: typ, Data: data}
}

func newCreateSecretGenericCommand(g *globalOptions) *cobra.Command {
	var (
		src dataSources
		out createOutput
		typ string
	)
	cmd := &cobra.Command{
		Use:   "generic NAME [--type=string] [--from-file=[key=]source] [--from-literal=key=value] [--from-env-file=source] [--dry-run=client] [-o yaml]",
		Short: "Create a Secret from files, directories, env files or literal values",
		Example: `  # A Secret of a password and a key file
  dockctl create secret generic db --from-literal=password=s3cret --from-file=ssh-key=id_ed25519`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf(cmd, "exactly one NAME is required, got %d", len(args))
			}
			data, err := src.read("Data for Secret " + args[0])
			if err != nil {
				return err
			}
			return createObject(cmd, g, &out, kindSecret, args[0], secretObject(g, args[0], corev1.SecretType(typ), data))
		},
	}
	cmd.Flags().StringVar(&typ, "type", "", "the Secret's type (default Opaque)")
	src.addFlags(cmd)
	out.addFlags(cmd)
	return cmd
}

func newCreateSecretTLSCommand(g *globalOptions) *cobra.Command {
	var (
		out       createOutput
		cert, key string
	)
	cmd := &cobra.Command{
		Use:     "tls NAME --cert=path/to/cert/file --key=path/to/key/file [--dry-run=client] [-o yaml]",
		Short:   "Create a TLS Secret (kubernetes.io/tls) from a PEM certificate and its key",
		Example: `  dockctl create secret tls web-tls --cert=tls.crt --key=tls.key`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf(cmd, "exactly one NAME is required, got %d", len(args))
			}
			if cert == "" || key == "" {
				return fmt.Errorf("key and cert must be specified")
			}
			c, err := os.ReadFile(cert)
			if err != nil {
				return err
			}
			k, err := os.ReadFile(key)
			if err != nil {
				return err
			}
			// As kubectl: a pair that does not match is refused.
			if _, err := tls.X509KeyPair(c, k); err != nil {
				return fmt.Errorf("failed to load key pair %v", err)
			}
			data := map[string][]byte{corev1.TLSCertKey: c, corev1.TLSPrivateKeyKey: k}
			return createObject(cmd, g, &out, kindSecret, args[0], secretObject(g, args[0], corev1.SecretTypeTLS, data))
		},
	}
	cmd.Flags().StringVar(&cert, "cert", "", "path to the PEM encoded public key certificate")
	cmd.Flags().StringVar(&key, "key", "", "path to the private key of the certificate")
	out.addFlags(cmd)
	return cmd
}

// dockerConfigEntry is one registry of a .dockerconfigjson, in kubectl's
// field order.
type dockerConfigEntry struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Email    string `json:"email,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

func newCreateSecretDockerRegistryCommand(g *globalOptions) *cobra.Command {
	var (
		out                           createOutput
		server, user, password, email string
		files                         []string
	)
	cmd := &cobra.Command{
		Use:     "docker-registry NAME --docker-username=user --docker-password=password [--docker-server=string] [--docker-email=string] | --from-file=[key=]source",
		Short:   "Create a Secret of registry credentials (kubernetes.io/dockerconfigjson) for imagePullSecrets",
		Example: `  dockctl create secret docker-registry regcred --docker-server=registry.example.com --docker-username=me --docker-password=$TOKEN`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf(cmd, "exactly one NAME is required, got %d", len(args))
			}
			var data map[string][]byte
			if len(files) > 0 {
				src := dataSources{files: files}
				var err error
				if data, err = src.read("Data for Secret " + args[0]); err != nil {
					return err
				}
			} else {
				if user == "" || password == "" {
					return fmt.Errorf("either --from-file or the combination of --docker-username, --docker-password and --docker-server is required")
				}
				cfg := map[string]map[string]dockerConfigEntry{"auths": {server: {Username: user, Password: password, Email: email,
					Auth: base64.StdEncoding.EncodeToString([]byte(user + ":" + password))}}}
				j, err := json.Marshal(cfg)
				if err != nil {
					return err
				}
				data = map[string][]byte{corev1.DockerConfigJsonKey: j}
			}
			return createObject(cmd, g, &out, kindSecret, args[0], secretObject(g, args[0], corev1.SecretTypeDockerConfigJson, data))
		},
	}
	cmd.Flags().StringVar(&server, "docker-server", "https://index.docker.io/v1/", "server location for the registry")
	cmd.Flags().StringVar(&user, "docker-username", "", "username for the registry")
	cmd.Flags().StringVar(&password, "docker-password", "", "password for the registry")
	cmd.Flags().StringVar(&email, "docker-email", "", "email for the registry")
	cmd.Flags().StringSliceVar(&files, "from-file", nil, "a .dockerconfigjson file (key=path), instead of the --docker-* flags")
	out.addFlags(cmd)
	return cmd
}

// deploymentObject is kubectl create deployment's: labels app=NAME on the
// deployment, its selector and its pods, one container per image named
// after the image (its last path element without tag or digest, _ made
// -), the port on the first container.
func deploymentObject(g *globalOptions, name string, labels map[string]string, images []string, replicas int32, port int32) *appsv1.Deployment {
	var containers []corev1.Container
	for _, image := range images {
		n := image[strings.LastIndex(image, "/")+1:]
		n, _, _ = strings.Cut(n, "@")
		n, _, _ = strings.Cut(n, ":")
		containers = append(containers, corev1.Container{Name: strings.ReplaceAll(n, "_", "-"), Image: image})
	}
	if port >= 0 && len(containers) > 0 {
		containers[0].Ports = []corev1.ContainerPort{{ContainerPort: port}}
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: g.objectMeta(name, labels),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: containers},
			},
		},
	}
}

func newCreateDeploymentCommand(g *globalOptions) *cobra.Command {
	var (
		out      createOutput
		images   []string
		replicas int32
		port     int32
	)
	cmd := &cobra.Command{
		Use:     "deployment NAME --image=image -- [COMMAND] [args...]",
		Aliases: []string{"deploy"},
		Short:   "Create a deployment of the given images",
		Example: `  # A deployment of three replicas of web:1.2, listening on 8080
  dockctl create deployment web --image=web:1.2 --replicas=3 --port=8080

  # Print it as a manifest to start from
  dockctl create deployment web --image=web:1.2 --dry-run=client -o yaml > web.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf(cmd, "NAME is required")
			}
			if len(images) == 0 {
				// kubectl's (cobra's) words for its required flag.
				return usageErrorf(cmd, `required flag(s) "image" not set`)
			}
			name := args[0]
			d := deploymentObject(g, name, map[string]string{"app": name}, images, replicas, port)
			if command := args[1:]; len(command) > 0 {
				// As kubectl: the command (after --) goes to the one
				// image's container.
				if len(images) > 1 {
					return fmt.Errorf("cannot specify multiple --image options and command")
				}
				d.Spec.Template.Spec.Containers[0].Command = command
			}
			return createObject(cmd, g, &out, kindDeployment, name, d)
		},
	}
	cmd.Flags().StringSliceVar(&images, "image", nil, "image of a container (repeatable: one container each)")
	cmd.Flags().Int32VarP(&replicas, "replicas", "r", 1, "number of replicas")
	cmd.Flags().Int32Var(&port, "port", -1, "the port the first container exposes")
	out.addFlags(cmd)
	return cmd
}

// cutEnv splits KEY=VALUE.
func cutEnv(s string) (string, string, bool) {
	k, v, ok := strings.Cut(s, "=")
	return k, v, ok && k != ""
}

func k8sEnv(k, v string) corev1.EnvVar { return corev1.EnvVar{Name: k, Value: v} }
