package main

import (
	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/reconciler"
)

// networkDocker is the client's network API for the controller; replaced
// when "dx" lands (the client itself is then the NetworkDocker).
func networkDocker(*dockerx.Client) reconciler.NetworkDocker { return nil }
