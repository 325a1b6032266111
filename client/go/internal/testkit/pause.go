package testkit

import "syscall"

// Pause SIGSTOPs node id: it stays a member, holds its connections and
// answers nothing, as a node stuck in a long GC pause or a frozen VM.
// Resume continues it; a node still paused when the test ends is
// continued first, so that Stop's SIGTERM reaches it.
func (c *Cluster) Pause(id int) {
	n := c.Node(id)
	if n.cmd == nil {
		c.t.Fatalf("pausing node %d: it is not running", id)
	}
	if err := n.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		c.t.Fatalf("pausing node %d: %v", id, err)
	}
	c.t.Cleanup(func() { c.Resume(id) })
}

// Resume SIGCONTs a node Pause stopped (a running node is unaffected).
func (c *Cluster) Resume(id int) {
	if n := c.Node(id); n.cmd != nil {
		_ = n.cmd.Process.Signal(syscall.SIGCONT)
	}
}
