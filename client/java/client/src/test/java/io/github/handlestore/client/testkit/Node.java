package io.github.handlestore.client.testkit;

import java.nio.file.Path;

/** One member: its client address, peer address (with TLS), data directory, log, and process. */
public final class Node {
  final int id;
  final String addr;
  final String peerAddr;
  final Path data;
  final Path log;
  Process process;

  Node(int id, String addr, String peerAddr, Path data) {
    this.id = id;
    this.addr = addr;
    this.peerAddr = peerAddr;
    this.data = data;
    this.log = Path.of(data + ".log");
  }

  /** The member's id. */
  public int id() {
    return id;
  }

  /** Its client address, "127.0.0.1:port". */
  public String addr() {
    return addr;
  }
}
