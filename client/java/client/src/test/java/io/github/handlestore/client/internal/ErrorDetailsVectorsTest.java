package io.github.handlestore.client.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.ByteString;
import io.github.handlestore.client.errors.ErrorDetails;
import io.github.handlestore.client.testkit.Binary;
import io.github.handlestore.proto.v1.WriteFailure;
import io.grpc.Metadata;
import io.grpc.Status;
import java.io.IOException;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * The shared error-details vectors (proto/vectors/error_details.json): a call's {@code
 * grpc-status-details-bin} trailer and a write's failure inside a Submit keep the node's detail in
 * both forms (a {@code google.rpc.Status} holding it as an {@code Any}, and the bare ErrorDetail of
 * the previous release), and find none in the rest.
 */
class ErrorDetailsVectorsTest {
  @Test
  void everyCaseIsReadAsTheVectorsSay() throws IOException {
    JsonNode cases =
        new ObjectMapper()
            .readTree(Binary.repo().resolve("proto/vectors/error_details.json").toFile())
            .get("cases");
    assertTrue(cases.size() >= 10, "too few cases");
    for (JsonNode c : cases) {
      String name = c.get("name").asText();
      byte[] raw = HexFormat.of().parseHex(c.get("details").asText());
      JsonNode e = c.get("expect");
      ErrorDetails want =
          e.isNull()
              ? ErrorDetails.NONE
              : new ErrorDetails(
                  e.get("reason").asText(),
                  e.get("leader_id").asLong(),
                  e.get("leader_addr").asText(),
                  e.get("current_revision").asLong(),
                  e.get("compact_revision").asLong());
      Status status =
          Status.fromCodeValue(c.get("code").asInt()).withDescription(c.get("message").asText());
      Metadata trailers = new Metadata();
      if (raw.length > 0) {
        trailers.put(NodeStatus.DETAILS_KEY, raw);
      }
      assertEquals(want, NodeStatus.of(status, trailers).details(), name + " (a call's trailer)");
      WriteFailure f =
          WriteFailure.newBuilder()
              .setCode(c.get("code").asInt())
              .setMessage(c.get("message").asText())
              .setDetails(ByteString.copyFrom(raw))
              .build();
      assertEquals(want, NodeStatus.ofFailure(f).details(), name + " (a write's failure)");
    }
  }
}
