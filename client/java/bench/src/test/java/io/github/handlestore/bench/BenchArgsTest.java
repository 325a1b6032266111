package io.github.handlestore.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class BenchArgsTest {
  @Test
  void defaultsAreTheGoDriversOnes() {
    BenchArgs a = BenchArgs.parse();
    assertEquals("", a.endpoints());
    assertEquals("", a.redis());
    assertEquals(List.of(1, 64), a.tasks());
    assertEquals(10.0, a.seconds());
    assertEquals(30.0, a.warmup());
  }

  @Test
  void takesTheFlagsTheHarnessPasses() {
    BenchArgs a =
        BenchArgs.parse(
            "--endpoints",
            "127.0.0.1:1,127.0.0.1:2",
            "--redis=redis://127.0.0.1:3/",
            "--tasks",
            "4, 16",
            "--seconds",
            "2.5",
            "--warmup=0");
    assertEquals("127.0.0.1:1,127.0.0.1:2", a.endpoints());
    assertEquals("redis://127.0.0.1:3/", a.redis());
    assertEquals(List.of(4, 16), a.tasks());
    assertEquals(2.5, a.seconds());
    assertEquals(0.0, a.warmup());
  }

  @Test
  void refusesBadFlagsSayingWhich() {
    assertMessage("--tasks: \"0\" is not a positive count", "--tasks", "1,0");
    assertMessage("--tasks: \"x\" is not a positive count", "--tasks", "x");
    assertMessage("--tasks: \"\" is not a positive count", "--tasks", "1,");
    assertMessage("--seconds: \"0\" is not a positive number of seconds", "--seconds", "0");
    assertMessage("--warmup: \"-1\" is not a non-negative number of seconds", "--warmup", "-1");
    assertMessage("unknown flag --rounds", "--rounds", "3");
    assertMessage("--redis needs a value", "--redis");
  }

  private static void assertMessage(String expected, String... args) {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> BenchArgs.parse(args));
    assertTrue(e.getMessage().contains(expected), e.getMessage());
  }
}
