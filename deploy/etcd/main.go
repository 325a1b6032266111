// Command etcd is etcd's own server, etcdmain.Main at the release go.mod
// pins (go.etcd.io/etcd/server/v3 v3.7.3): the bench's and the side-by-side
// tests' `etcd`, built by deploy/install-bench-deps.sh. etcd's go.mod has
// replace directives, so `go install` of the module itself is refused;
// this main is the whole of what its own etcdmain package needs.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
