package io.github.handlestore.client.internal;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import io.github.handlestore.client.testkit.Binary;
import io.github.handlestore.proto.v1.ErrorDetail;
import io.github.handlestore.proto.v1.WriteFailure;
import io.grpc.Metadata;
import io.grpc.Status;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The shared retry vectors (proto/vectors/retry.json): each case's status, as grpc-java hands a
 * failed call over (its code, its description, and the node's ErrorDetail in a {@code
 * google.rpc.Status} in {@code grpc-status-details-bin} when the case has a reason) and as a
 * write's failure inside a Submit, gets the case's decision from {@link Decision}, the one rule of
 * the call loop, the Submits' per-item failures and the watch. A case's message is grpc-java's
 * description followed by its cause chain, which is the text {@link Decision} reads.
 */
class RetryVectorsTest {
  @Test
  void everyCaseIsDecidedAsTheVectorsSay() throws IOException {
    JsonNode cases =
        new ObjectMapper()
            .readTree(Binary.repo().resolve("proto/vectors/retry.json").toFile())
            .get("cases");
    assertTrue(cases.size() >= 40, "too few cases");
    List<String> wrong = new ArrayList<>();
    for (JsonNode c : cases) {
      Status status =
          Status.fromCode(Status.Code.valueOf(c.get("code").asText()))
              .withDescription(c.get("message").asText());
      byte[] details = details(status, c.get("reason"));
      Metadata trailers = new Metadata();
      if (details.length > 0) {
        trailers.put(NodeStatus.DETAILS_KEY, details);
      }
      check(c, "a call", NodeStatus.of(status, trailers), wrong);
      WriteFailure f =
          WriteFailure.newBuilder()
              .setCode(status.getCode().value())
              .setMessage(status.getDescription())
              .setDetails(ByteString.copyFrom(details))
              .build();
      check(c, "a write's failure", NodeStatus.ofFailure(f), wrong);
    }
    assertTrue(wrong.isEmpty(), String.join("\n", wrong));
  }

  /** A node's details for {@code reason}: none when it is null. */
  private static byte[] details(Status status, JsonNode reason) {
    if (reason.isNull()) {
      return new byte[0];
    }
    return com.google.rpc.Status.newBuilder()
        .setCode(status.getCode().value())
        .setMessage(status.getDescription())
        .addDetails(Any.pack(ErrorDetail.newBuilder().setReason(reason.asText()).build()))
        .build()
        .toByteArray();
  }

  /** Adds to {@code wrong} what the client decides otherwise than the case, naming the case. */
  private static void check(JsonNode c, String path, NodeStatus s, List<String> wrong) {
    Decision d = Decision.of(s);
    String call = d.retry() ? "retry" : "give_up";
    String watch = d.resume() ? "resume" : "give_up";
    Status.Code got = d.tls() ? s.tlsError("node").code() : s.toException().code();
    String want = c.has("error_code") ? c.get("error_code").asText() : got.name();
    if (!call.equals(c.get("call").asText())
        || !watch.equals(c.get("watch").asText())
        || !want.equals(got.name())) {
      wrong.add(
          String.format(
              "%s %s %s (%s): call %s, watch %s, error %s; the vectors say %s, %s, %s",
              c.get("code").asText(),
              c.get("reason"),
              c.get("message"),
              path,
              call,
              watch,
              got,
              c.get("call").asText(),
              c.get("watch").asText(),
              want));
    }
  }
}
