package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/store"
)

func newEditCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "edit KIND NAME",
		Short: "Edit a stored object (deployments, statefulsets, services, ingresses…) in your editor",
		Long: "Write the object as `get -o yaml` shows it (less the status Docker reports; a Secret's data base64, as kubectl shows\n" +
			"it) to a temporary file and open it in $KUBE_EDITOR, else $EDITOR, else vi. On save the object is stored as `apply -f`\n" +
			"of it would: validated in full, a changed pod template rolled out, a change of metadata alone not. An invalid object\n" +
			"reopens the file with the errors at the top; saving it again unchanged gives up (exit 1). Saving the file unchanged,\n" +
			"or empty, cancels the edit.\n\n" + kindsSentence(storeKindWords),
		Example: `  # Edit deployment web
  dockctl edit deployment web

  # Edit secret creds of namespace team with another editor
  KUBE_EDITOR="code --wait" dockctl edit secret/creds -n team`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, err := resourceArg(args, patchKinds...)
			if err != nil {
				return err
			}
			return runEdit(cmd.OutOrStdout(), cmd.ErrOrStderr(), g, g.ref(kind, name), launchEditor)
		},
	}
	return cmd
}

// editHeader is kubectl's comment at the top of the file edit opens.
const editHeader = `# Please edit the object below. Lines beginning with a '#' will be ignored,
# and an empty file will abort the edit. If an error occurs while saving this file will be
# reopened with the relevant failures.
#
`

// runEdit edits the stored object ref: edit opens the file it is given
// (launchEditor in dockctl, a fake in tests) and returns when it is saved.
func runEdit(out, errOut io.Writer, g *globalOptions, ref store.ObjectRef, edit func(path string) error) error {
	st, err := g.openStore()
	if err != nil {
		return err
	}
	obj, err := storedObject(g, st, ref)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := printObjects(&buf, "yaml", []any{obj}, true); err != nil {
		return err
	}
	original := buf.Bytes()
	// What the object was when the editor opened: a change made by anyone
	// else meanwhile (an apply, a scale) is a conflict, as kubectl's
	// resourceVersion makes it, never overwritten.
	was, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp("", "dockctl-edit-*.yaml")
	if err != nil {
		return err
	}
	path := f.Name()
	f.Close()
	keep := false // the user's changes are kept when the edit fails
	defer func() {
		if !keep {
			os.Remove(path)
		}
	}()
	content := original // what the file holds below its header
	var failure string  // the last save's error, "" before any
	for {
		file := editHeader + commentLines(failure) + string(content)
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			return err
		}
		if err := edit(path); err != nil {
			return fmt.Errorf("there was a problem with the editor: %v", err)
		}
		saved, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		edited := stripComments(saved)
		switch {
		case len(bytes.TrimSpace(edited)) == 0:
			fmt.Fprintln(out, "Edit cancelled, saved file was empty.")
			return nil
		case failure == "" && bytes.Equal(bytes.TrimSpace(edited), bytes.TrimSpace(stripComments(original))):
			fmt.Fprintln(out, "Edit cancelled, no changes made.")
			return nil
		case failure != "" && bytes.Equal(bytes.TrimSpace(edited), bytes.TrimSpace(stripComments(content))):
			// As kubectl: the same invalid object twice is giving up.
			keep = true
			fmt.Fprintf(errOut, "A copy of your changes has been stored to %q\n", path)
			return fmt.Errorf("Edit cancelled, no valid changes were saved.\n%s", failure)
		}
		content = edited
		j, err := yamlToJSON(edited)
		if err != nil {
			failure = fmt.Sprintf("The edited file had a syntax error: %v", err)
			continue
		}
		if now, err := liveJSON(g, st, ref); err != nil || !bytes.Equal(now, was) {
			keep = true
			fmt.Fprintf(errOut, "A copy of your changes has been stored to %q\n", path)
			if err != nil {
				return err
			}
			return fmt.Errorf("Operation cannot be fulfilled on %s: the object has been modified; please apply your changes to the latest version and try again", kubectlName(ref))
		}
		act, err := storeEdited(errOut, g, st, ref, j, "edit")
		if err != nil {
			failure = fmt.Sprintf("%s was not valid:\n* %s", kubectlName(ref), strings.ReplaceAll(err.Error(), "\n", "\n* "))
			continue
		}
		if act == store.Unchanged {
			fmt.Fprintln(out, "Edit cancelled, no changes made.")
		} else {
			fmt.Fprintf(out, "%s edited\n", kubectlName(ref))
		}
		return nil
	}
}

// commentLines is msg as comment lines, then an empty comment line.
func commentLines(msg string) string {
	if msg == "" {
		return ""
	}
	var b strings.Builder
	for _, l := range strings.Split(msg, "\n") {
		b.WriteString("# " + l + "\n")
	}
	b.WriteString("#\n")
	return b.String()
}

// stripComments drops the lines that begin with '#', as kubectl does.
func stripComments(b []byte) []byte {
	var out []byte
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimLeft(l, " \t"), []byte("#")) {
			out = append(out, l...)
		}
	}
	return out
}

// launchEditor runs the user's editor on path, on the terminal: the command
// of $KUBE_EDITOR, else $EDITOR, else vi, split as kubectl splits it.
func launchEditor(path string) error {
	args := editorArgs(os.Getenv("KUBE_EDITOR"), os.Getenv("EDITOR"), os.Getenv("SHELL"), path)
	c := exec.Command(args[0], args[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("%s exited with %v", args[0], ee)
		}
		return err
	}
	return nil
}

// editorArgs is the command that edits path, as kubectl makes it: the
// editor alone when it has no space; split on spaces when it has no quote
// or backslash; else run by the shell ($SHELL, else /bin/bash) with -c.
func editorArgs(kubeEditor, editor, shell, path string) []string {
	e := kubeEditor
	if e == "" {
		e = editor
	}
	if e == "" {
		e = "vi"
	}
	switch {
	case !strings.Contains(e, " "):
		return []string{e, path}
	case !strings.ContainsAny(e, "\"'\\"):
		return append(strings.Split(e, " "), path)
	}
	if shell == "" {
		shell = "/bin/bash"
	}
	return []string{shell, "-c", fmt.Sprintf("%s %q", e, path)}
}
