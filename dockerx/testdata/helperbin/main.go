// Command helperbin stands in for dockctl in the helper image tests: a
// small program built in the test, static (CGO_ENABLED=0) or, with cgo,
// dynamically linked (cgo.go), whose behaviour an exec can choose:
//
//	helperbin serve            sleep until SIGTERM or SIGINT
//	helperbin print TEXT CODE  TEXT on stdout, "stderr:TEXT" on stderr, exit CODE
//	helperbin flood N          N bytes of 'x' on stdout, exit 0
//	helperbin sleep SECONDS    sleep, exit 0
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: helperbin serve|print|flood|sleep")
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
	default:
		os.Exit(2)
	}
}
