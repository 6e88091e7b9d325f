package main

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/container"
)

// The fake Engine's archive endpoints (HEAD, GET and PUT
// /containers/ID/archive), over each container's in-memory files: what
// cp needs, as Docker answers — a GET's tar named from the path's base
// name, the path's stat in the X-Docker-Container-Path-Stat header, a
// PUT extracted into an existing directory.

// setFiles gives the container named name its files (path → content; a
// path ending in / is a directory); their directories exist.
func (d *dockerAPI) setFiles(name string, files map[string]string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.find(name)
	if c == nil {
		d.t.Fatalf("fake docker: no container %s", name)
	}
	c.files, c.dirs = map[string][]byte{}, map[string]bool{"/": true}
	for p, content := range files {
		if strings.HasSuffix(p, "/") {
			c.mkdirs(path.Clean(p))
			continue
		}
		c.mkdirs(path.Dir(p))
		c.files[p] = []byte(content)
	}
}

// setArchive makes every GET of an archive of the container named name
// answer raw.
func (d *dockerAPI) setArchive(name string, raw []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.find(name).archive = raw
}

// filesOf is a copy of the container's files.
func (d *dockerAPI) filesOf(name string) map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]string{}
	for p, b := range d.find(name).files {
		out[p] = string(b)
	}
	for p := range d.find(name).dirs {
		if p != "/" {
			out[p+"/"] = ""
		}
	}
	return out
}

func (c *fakeCtr) mkdirs(p string) {
	for ; p != "/" && p != "."; p = path.Dir(p) {
		c.dirs[p] = true
	}
}

func (d *dockerAPI) archive(w http.ResponseWriter, r *http.Request, id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.find(id)
	p := path.Clean(r.URL.Query().Get("path"))
	if c == nil {
		writeJSON(w, 404, map[string]string{"message": "No such container: " + id})
		return
	}
	_, isFile := c.files[p]
	isDir := c.dirs[p]
	if r.Method == http.MethodPut {
		if !isDir {
			writeJSON(w, 404, map[string]string{"message": "Could not find the file " + p + " in container " + id})
			return
		}
		tr := tar.NewReader(r.Body)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				writeJSON(w, 400, map[string]string{"message": err.Error()})
				return
			}
			name := path.Join(p, h.Name)
			switch h.Typeflag {
			case tar.TypeDir:
				c.mkdirs(name)
			case tar.TypeReg:
				c.mkdirs(path.Dir(name))
				b, _ := io.ReadAll(tr)
				c.files[name] = b
			}
		}
		w.WriteHeader(200)
		return
	}
	if !isFile && !isDir && c.archive == nil {
		writeJSON(w, 404, map[string]string{"message": "Could not find the file " + p + " in container " + id})
		return
	}
	mode := os.FileMode(0o644)
	if isDir {
		mode = os.ModeDir | 0o755
	}
	stat, _ := json.Marshal(container.PathStat{Name: path.Base(p), Size: int64(len(c.files[p])), Mode: mode})
	w.Header().Set("X-Docker-Container-Path-Stat", base64.StdEncoding.EncodeToString(stat))
	if r.Method == http.MethodHead {
		w.WriteHeader(200)
		return
	}
	w.Header().Set("Content-Type", "application/x-tar")
	if c.archive != nil {
		w.Write(c.archive)
		return
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	base := path.Base(p)
	var names []string
	for f := range c.files {
		if f == p || strings.HasPrefix(f, p+"/") {
			names = append(names, f)
		}
	}
	for dir := range c.dirs {
		if dir == p || strings.HasPrefix(dir, p+"/") {
			names = append(names, dir+"/")
		}
	}
	sort.Strings(names)
	for _, n := range names {
		rel := base + strings.TrimPrefix(n, p)
		if strings.HasSuffix(n, "/") {
			tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel, Mode: 0o755})
			continue
		}
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o644, Size: int64(len(c.files[n]))})
		tw.Write(c.files[n])
	}
	tw.Close()
	w.Write(buf.Bytes())
}
