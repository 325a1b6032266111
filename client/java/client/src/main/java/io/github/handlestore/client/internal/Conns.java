package io.github.handlestore.client.internal;

import io.grpc.ChannelCredentials;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What a client and its namespace views share: one gRPC channel per endpoint, made on first use,
 * the endpoint believed to lead, and the credentials every call carries.
 */
public final class Conns implements AutoCloseable {
  /** The largest message sent or accepted (values are limited by the node). */
  static final int MAX_MESSAGE = 64 << 20;

  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  private final List<String> targets;
  private final ChannelCredentials credentials;
  private final String token;
  private final AtomicInteger preferred = new AtomicInteger();
  private final ManagedChannel[] open;
  private boolean closed;

  /**
   * Connections to {@code targets} ("host:port"), with a bearer {@code token} ("" for none).
   * Nothing is dialed yet.
   */
  public Conns(List<String> targets, ChannelCredentials credentials, String token) {
    this.targets = List.copyOf(targets);
    this.credentials = credentials;
    this.token = token;
    this.open = new ManagedChannel[targets.size()];
  }

  /** The endpoints, as "host:port". */
  public List<String> targets() {
    return targets;
  }

  /**
   * The channel to endpoint {@code i}, made now if it is not yet; a channel whose node was down is
   * told to dial again now rather than after gRPC's own backoff (up to two minutes): the call's
   * retry loop paces the attempts.
   */
  synchronized ManagedChannel channel(int i) {
    if (closed) {
      throw new IllegalStateException("handlestore: the client is closed");
    }
    ManagedChannel ch = open[i];
    if (ch == null) {
      ch = dial(targets.get(i));
      open[i] = ch;
    } else if (ch.getState(false) == ConnectivityState.TRANSIENT_FAILURE) {
      ch.resetConnectBackoff();
    }
    return ch;
  }

  private ManagedChannel dial(String target) {
    int colon = target.lastIndexOf(':');
    String host = target.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    int port = Integer.parseInt(target.substring(colon + 1));
    return NettyChannelBuilder.forAddress(host, port, credentials)
        // A connection a node does not accept (a host gone) is given up after proto/wire.txt's
        // connect timeout, as in every client whose gRPC library takes one (Netty's default: 30 s).
        .withOption(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Wire.CONNECT_TIMEOUT.toMillis())
        .maxInboundMessageSize(MAX_MESSAGE)
        // A node that stops answering is noticed without calls in flight.
        .keepAliveTime(10, TimeUnit.SECONDS)
        .keepAliveTimeout(5, TimeUnit.SECONDS)
        // The client retries itself, with write ids; gRPC's own retries stay off.
        .disableRetry()
        .build();
  }

  /** The metadata of a call: its credentials. */
  Metadata headers() {
    Metadata md = new Metadata();
    if (!token.isEmpty()) {
      md.put(AUTHORIZATION, "Bearer " + token);
    }
    return md;
  }

  /** The endpoint with this "host:port", or -1. */
  int indexOf(String addr) {
    return addr.isEmpty() ? -1 : targets.indexOf(addr);
  }

  /** The endpoint calls go to first: the leader, once known. */
  public int preferredIndex() {
    return Math.floorMod(preferred.get(), targets.size());
  }

  void prefer(int i) {
    preferred.set(i);
  }

  /** Whether {@link #close()} was called. */
  public synchronized boolean isClosed() {
    return closed;
  }

  /** Closes every channel; calls in flight end, and later ones are refused. */
  @Override
  public void close() {
    ManagedChannel[] channels;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      channels = open.clone();
    }
    for (ManagedChannel ch : channels) {
      if (ch != null) {
        ch.shutdownNow();
      }
    }
    for (ManagedChannel ch : channels) {
      if (ch != null) {
        try {
          ch.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }
}
