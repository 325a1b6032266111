package io.github.handlestore.examples.cart;

import io.modelcontextprotocol.modern.McpException;
import io.modelcontextprotocol.modern.server.McpRequestContext;
import io.modelcontextprotocol.modern.server.RequestStateCodec;

/**
 * The request-state codec of a server none of whose tools asks for input mid-call: it seals nothing
 * and refuses any {@code requestState} a client sends. Set so that the modern server does not make
 * its default codec, whose per-process random key (and the warning it logs) would suggest state
 * that one replica seals and another cannot open.
 */
final class NoRequestState implements RequestStateCodec {
  @Override
  public String seal(McpRequestContext ctx, String state) {
    throw new IllegalStateException("the cart server asks for no input, so it seals no state");
  }

  @Override
  public String open(McpRequestContext ctx, String sealed) {
    throw McpException.invalidParams("this server issued no requestState");
  }
}
