// Command helperbin stands in for dockctl in the helper image tests: a
// small program built in the test, static (CGO_ENABLED=0) or, with cgo,
// dynamically linked (cgo.go), whose behaviour an exec can choose:
//
//	helperbin serve            sleep until SIGTERM or SIGINT
//	helperbin print TEXT CODE  TEXT on stdout, "stderr:TEXT" on stderr, exit CODE
//	helperbin flood N          N bytes of 'x' on stdout, exit 0
//	helperbin sleep SECONDS    sleep, exit 0
//	helperbin count            read stdin to its end, print how many bytes
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: helperbin serve|print|flood|sleep|count")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		<-ch
	case "print":
		code, _ := strconv.Atoi(os.Args[3])
		fmt.Fprint(os.Stdout, os.Args[2])
		fmt.Fprint(os.Stderr, "stderr:"+os.Args[2])
		os.Exit(code)
	case "flood":
		n, _ := strconv.Atoi(os.Args[2])
		os.Stdout.Write(bytes.Repeat([]byte("x"), n))
	case "sleep":
		s, _ := strconv.Atoi(os.Args[2])
		time.Sleep(time.Duration(s) * time.Second)
	case "count":
		n, err := io.Copy(io.Discard, os.Stdin)
		if err != nil {
			os.Exit(1)
		}
		fmt.Fprint(os.Stdout, n)
	default:
		os.Exit(2)
	}
}
