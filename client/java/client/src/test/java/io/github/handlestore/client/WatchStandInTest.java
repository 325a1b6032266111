package io.github.handlestore.client;

import static io.github.handlestore.client.testkit.Await.error;
import static io.github.handlestore.client.testkit.Await.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.errors.CallDeadlineException;
import io.github.handlestore.client.errors.InternalException;
import io.github.handlestore.client.errors.PermissionDeniedException;
import io.github.handlestore.client.errors.ShutdownException;
import io.github.handlestore.client.testkit.Cluster;
import io.github.handlestore.client.testkit.FakeWatchNodes;
import io.github.handlestore.client.testkit.FakeWatchNodes.Stream;
import io.github.handlestore.proto.v1.EventKind;
import io.github.handlestore.proto.v1.StateValue;
import io.github.handlestore.proto.v1.WatchEvent;
import io.github.handlestore.proto.v1.WatchResponse;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * A watch against stand-in nodes that misbehave on cue: a resumed stream that repeats what was
 * delivered, a node that goes quiet, a first answer that is not 'created', a refusal resuming
 * cannot fix, progress notices behind the position, and no node taking the watch in time.
 */
class WatchStandInTest {
  static Client client(FakeWatchNodes nodes, Duration callTimeout) {
    return new Client(
        ClientConfig.builder()
            .endpoints(nodes.endpoints())
            .namespace("java-stand-in")
            .callTimeout(callTimeout)
            .build());
  }

  /** A response at {@code revision} with a put of key "k/<r>" for each of {@code events}. */
  static WatchResponse at(long revision, long... events) {
    WatchResponse.Builder b = WatchResponse.newBuilder().setRevision(revision);
    for (long r : events) {
      b.addEvents(
          WatchEvent.newBuilder()
              .setKind(EventKind.EVENT_KIND_PUT)
              .setRevision(r)
              .setKey("k/" + r)
              .setValue(StateValue.newBuilder().setJson(String.valueOf(r))));
    }
    return b.build();
  }

  static Stream stream(Status.Code end, String reason, WatchResponse... responses) {
    return new Stream(List.of(responses), end, reason);
  }

  static List<Long> revisions(WatchBatch b) {
    return b.changes().stream().map(Change::revision).toList();
  }

  @Test
  void aResumedStreamStartsAtThePositionAndWhatItRepeatsIsDropped() {
    try (FakeWatchNodes nodes = new FakeWatchNodes(2);
        Client c = client(nodes, Duration.ofSeconds(5))) {
      nodes
          .then(
              stream(
                  Status.Code.UNAVAILABLE,
                  "shutdown",
                  FakeWatchNodes.created(4),
                  at(5, 5),
                  at(6, 6)))
          .then(stream(null, "", FakeWatchNodes.created(6), at(7, 6, 7)));
      BlockingWatch w = value(c.watch(WatchTarget.prefix("k/"))).blocking();
      assertEquals(List.of(5L), revisions(w.next()));
      assertEquals(List.of(6L), revisions(w.next()));
      assertEquals(List.of(7L), revisions(w.next()), "revision 6 came again: dropped");
      assertEquals(8, w.async().position());
      List<FakeWatchNodes.Got> got = nodes.got();
      assertEquals(List.of(0L, 7L), got.stream().map(g -> g.request().getStartRevision()).toList());
      assertNotEquals(got.get(0).node(), got.get(1).node(), "resumed on the other node");
      assertEquals(1, w.async().resumes());
      w.close();
    }
  }

  @Test
  void aNodeThatGoesQuietIsLeftForAnother() {
    try (FakeWatchNodes nodes = new FakeWatchNodes(2);
        Client c = client(nodes, Duration.ofSeconds(5))) {
      nodes
          .then(stream(null, "", FakeWatchNodes.created(1)))
          .then(stream(null, "", FakeWatchNodes.created(1), at(2, 2)));
      try (BlockingWatch w = value(c.watch(WatchTarget.key("k/2"))).blocking()) {
        // No progress, no end: after Watching.SILENCE the node counts as lost.
        WatchBatch b = w.poll(Watching.SILENCE.multipliedBy(3)).orElseThrow();
        assertEquals(List.of(2L), revisions(b));
        assertEquals(2, nodes.got().get(1).request().getStartRevision());
      }
    }
  }

  @Test
  void aFirstAnswerThatIsNotCreatedFailsTheWatch() {
    try (FakeWatchNodes nodes = new FakeWatchNodes(2);
        Client c = client(nodes, Duration.ofSeconds(5))) {
      nodes.then(stream(null, "", at(5, 5)));
      error(InternalException.class, c.watch(WatchTarget.prefix("")));
    }
  }

  @Test
  void aRefusalResumingCannotFixEndsTheWatch() {
    try (FakeWatchNodes nodes = new FakeWatchNodes(2);
        Client c = client(nodes, Duration.ofSeconds(5))) {
      nodes.then(
          stream(
              Status.Code.PERMISSION_DENIED,
              "permission_denied",
              FakeWatchNodes.created(1),
              at(2, 2)));
      Watch w = value(c.watch(WatchTarget.prefix("k/")));
      assertEquals(List.of(2L), revisions(value(w.next())));
      error(PermissionDeniedException.class, w.next());
      WatchClosedException closed = error(WatchClosedException.class, w.next());
      assertInstanceOf(PermissionDeniedException.class, closed.getCause());
      assertEquals(1, nodes.got().size(), "not resumed");
    }
  }

  @Test
  void progressNoticesAreDeliveredOnlyWhenAskedAndNeverBehind() {
    try (FakeWatchNodes nodes = new FakeWatchNodes(2);
        Client c = client(nodes, Duration.ofSeconds(5))) {
      WatchResponse[] script = {FakeWatchNodes.created(4), at(3), at(4), at(9), at(10, 10)};
      nodes.then(stream(null, "", script)).then(stream(null, "", script));
      List<Long> seen = new ArrayList<>();
      try (BlockingWatch w =
          value(c.watch(WatchTarget.prefix("k/"), WatchOptions.DEFAULT.withProgress()))
              .blocking()) {
        for (int i = 0; i < 3; i++) {
          seen.add(w.next().revision());
        }
      }
      assertEquals(List.of(4L, 9L, 10L), seen, "the notice at 3 is behind the position (5)");
      try (BlockingWatch w = value(c.watch(WatchTarget.prefix("k/"))).blocking()) {
        WatchBatch b = w.next();
        assertEquals(List.of(10L), revisions(b), "no notices unless asked");
      }
    }
  }

  @Test
  void aWatchNoNodeTakesWithinTheCallTimeoutFailsWithTheLastRefusal() {
    try (FakeWatchNodes nodes = new FakeWatchNodes(2);
        Client c = client(nodes, Duration.ofMillis(800))) {
      for (int i = 0; i < 500; i++) {
        nodes.then(stream(Status.Code.UNAVAILABLE, "shutdown"));
      }
      CallDeadlineException e =
          error(CallDeadlineException.class, c.watch(WatchTarget.prefix("k/")));
      assertInstanceOf(ShutdownException.class, e.getCause());
      assertTrue(nodes.got().size() > 1, "tried again: " + nodes.got().size());
    }
  }

  @Test
  void aWatchGivenUpWhileItOpensStopsTrying() {
    try (FakeWatchNodes nodes = new FakeWatchNodes(2);
        Client c = client(nodes, Duration.ofSeconds(60))) {
      for (int i = 0; i < 500; i++) {
        nodes.then(stream(Status.Code.UNAVAILABLE, "shutdown"));
      }
      CompletableFuture<Watch> opening = c.watch(WatchTarget.prefix("k/"));
      long end = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (nodes.got().size() < 3 && System.nanoTime() < end) {
        Cluster.sleep(Duration.ofMillis(10));
      }
      opening.cancel(false);
      Cluster.sleep(Duration.ofMillis(200)); // an attempt on the wire may still arrive
      int at = nodes.got().size();
      Cluster.sleep(Duration.ofMillis(1500));
      assertEquals(at, nodes.got().size(), "the watch went on opening after it was given up");
    }
  }
}
