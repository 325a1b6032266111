package io.github.handlestore.mcp.tasks;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.Formats;
import io.github.handlestore.client.HandleStore;
import io.github.handlestore.client.Ttl;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;

/**
 * Tasks (SEP-2663) shared by every replica: the shape C#'s {@code IMcpTaskStore} settled on
 * (create, get, set completed / failed / cancelled, input requests and their responses), whose docs
 * say that under stateless HTTP the store must be shared or external. Each task is one handle in
 * the handle store {@value #STORE} (in the client's namespace), holding a {@link StoredTask}; every
 * change is a compare-and-set ({@link HandleStore#update}), so replicas changing one task at once
 * never undo each other, and a final status is final.
 *
 * <p>{@link #create} returns once the task is committed by a quorum: a {@code tasks/get} for it on
 * any replica then finds it (SEP-2663: "MUST NOT return CreateTaskResult until the task is durably
 * created"), and it outlives the replica that created it. A task lives {@link Builder#ttl its TTL}
 * from its creation (the handle's expiry), then is gone (its id is then unknown). Every method
 * returns a {@link CompletableFuture}; an id that is not one of this store's (malformed, unknown,
 * expired) reads as absent, never as an error. Safe for concurrent use.
 */
public final class ClusterTaskStore {
  /** The handle store tasks live in. */
  public static final String STORE = "mcp-tasks";

  /** The id prefix of a task. */
  public static final String ID_PREFIX = "task";

  private final HandleStore<StoredTask> tasks;
  private final Duration ttl;
  private final long pollInterval;
  private final Clock clock;

  private ClusterTaskStore(Builder b) {
    this.tasks = b.client.handleStore(STORE, StoredTask.class).prefix(ID_PREFIX).build();
    this.ttl = b.ttl;
    this.pollInterval = b.pollInterval.toMillis();
    this.clock = b.clock;
  }

  /** A store over {@code client}'s namespace with the defaults (an hour, polled every second). */
  public static ClusterTaskStore of(Client client) {
    return builder(client).build();
  }

  /** A store over {@code client}'s namespace, shaped by the builder. */
  public static Builder builder(Client client) {
    return new Builder(client);
  }

  /** Creates a task, {@code working}, and gives it once it is committed. */
  public CompletableFuture<McpTask> create() {
    return create(null);
  }

  /** {@link #create()} with a status message. */
  public CompletableFuture<McpTask> create(String statusMessage) {
    String now = now();
    String id = Formats.newHandleId(ID_PREFIX);
    Long seconds = ttl.isNegative() ? null : ttl.toSeconds();
    McpTask task =
        new McpTask(
            id,
            TaskStatus.WORKING,
            statusMessage,
            now,
            now,
            seconds,
            pollInterval,
            null,
            null,
            null);
    return tasks
        .mintWithId(id, new StoredTask(task, null, null), ttl.isNegative() ? Ttl.NEVER : ttl)
        .thenApply(done -> task);
  }

  /** The task as {@code tasks/get} shows it; empty if there is no such task (any more). */
  public CompletableFuture<Optional<McpTask>> get(String taskId) {
    return stored(taskId).thenApply(s -> s.map(StoredTask::task));
  }

  /**
   * Back to {@code working} (with a message, which may be null); false if the task is absent or
   * final.
   */
  public CompletableFuture<Boolean> setWorking(String taskId, String statusMessage) {
    return change(
        taskId,
        s ->
            new StoredTask(
                s.task().moved(TaskStatus.WORKING, statusMessage, now()),
                s.responses(),
                s.answered()));
  }

  /**
   * Adds input requests (merged with those outstanding) and moves the task to {@code
   * input_required}; false if the task is absent or final. A key answered before is refused ({@link
   * IllegalArgumentException}): SEP-2663 never reuses a key within a task.
   */
  public CompletableFuture<Boolean> setInputRequests(
      String taskId, Map<String, Object> inputRequests) {
    if (inputRequests == null || inputRequests.isEmpty()) {
      return CompletableFuture.failedFuture(
          new IllegalArgumentException("inputRequests must name at least one request"));
    }
    return change(
        taskId,
        s -> {
          for (String key : inputRequests.keySet()) {
            if (s.answered().contains(key)) {
              throw new IllegalArgumentException(
                  "input request key " + key + " was answered before in task " + taskId);
            }
          }
          Map<String, Object> all = new LinkedHashMap<>(outstanding(s));
          all.putAll(inputRequests);
          McpTask t = s.task().moved(TaskStatus.INPUT_REQUIRED, s.task().statusMessage(), now());
          return new StoredTask(t.with(all, null, null), s.responses(), s.answered());
        });
  }

  /**
   * Takes the responses to outstanding input requests ({@code tasks/update}): answered requests
   * leave the task, their responses wait for {@link #takeInputResponses}, and once none is
   * outstanding the task is {@code working} again. Responses to keys not outstanding are ignored;
   * false if nothing was outstanding for them (or the task is absent or final).
   */
  public CompletableFuture<Boolean> resolveInputResponses(
      String taskId, Map<String, Object> inputResponses) {
    if (inputResponses == null) {
      return CompletableFuture.failedFuture(new NullPointerException("inputResponses"));
    }
    return change(
        taskId,
        s -> {
          Map<String, Object> left = new LinkedHashMap<>(outstanding(s));
          Map<String, Object> got = new LinkedHashMap<>(s.responses());
          List<String> answered = new ArrayList<>(s.answered());
          for (Map.Entry<String, Object> r : inputResponses.entrySet()) {
            if (left.remove(r.getKey()) != null) {
              got.put(r.getKey(), r.getValue());
              answered.add(r.getKey());
            }
          }
          if (answered.size() == s.answered().size()) {
            throw Unchanged.INSTANCE;
          }
          McpTask t = s.task();
          McpTask next =
              left.isEmpty()
                  ? t.moved(TaskStatus.WORKING, t.statusMessage(), now())
                  : t.moved(TaskStatus.INPUT_REQUIRED, t.statusMessage(), now())
                      .with(left, null, null);
          return new StoredTask(next, got, answered);
        });
  }

  /**
   * The responses that arrived since the last take, removed from the task (for the work that asked,
   * on whichever replica it runs); empty if none, or if the task is absent.
   */
  public CompletableFuture<Map<String, Object>> takeInputResponses(String taskId) {
    AtomicReference<Map<String, Object>> taken = new AtomicReference<>(Map.of());
    return update(
            taskId,
            cur -> {
              if (cur.responses().isEmpty()) {
                throw Unchanged.INSTANCE;
              }
              taken.set(cur.responses()); // the last run of fn is the one written
              return new StoredTask(cur.task(), null, cur.answered());
            },
            true)
        .thenApply(done -> done ? taken.get() : Map.<String, Object>of());
  }

  /** Completes the task with the request's result; false if it is absent or already final. */
  public CompletableFuture<Boolean> setCompleted(String taskId, Map<String, Object> result) {
    Objects.requireNonNull(result, "result");
    return finish(taskId, TaskStatus.COMPLETED, null, result, null);
  }

  /**
   * Fails the task with the JSON-RPC error ({@code code}, {@code message}, optional {@code data})
   * and a status message; false if it is absent or already final.
   */
  public CompletableFuture<Boolean> setFailed(
      String taskId, Map<String, Object> error, String statusMessage) {
    Objects.requireNonNull(error, "error");
    return finish(taskId, TaskStatus.FAILED, statusMessage, null, error);
  }

  /**
   * Cancels the task ({@code tasks/cancel}); false if it is absent or already final (a completed
   * task stays completed).
   */
  public CompletableFuture<Boolean> setCancelled(String taskId) {
    return finish(taskId, TaskStatus.CANCELLED, null, null, null);
  }

  private CompletableFuture<Boolean> finish(
      String taskId,
      TaskStatus status,
      String message,
      Map<String, Object> result,
      Map<String, Object> error) {
    return change(
        taskId,
        s -> {
          String m = message != null ? message : s.task().statusMessage();
          McpTask t = s.task().moved(status, m, now()).with(null, result, error);
          return new StoredTask(t, s.responses(), s.answered());
        });
  }

  private static Map<String, Object> outstanding(StoredTask s) {
    Map<String, Object> r = s.task().inputRequests();
    return r == null ? Map.of() : r;
  }

  /** Applies {@code fn} to a task that is not final; false if absent, final, or unchanged. */
  private CompletableFuture<Boolean> change(String taskId, UnaryOperator<StoredTask> fn) {
    return update(taskId, fn, false);
  }

  private CompletableFuture<Boolean> update(
      String taskId, UnaryOperator<StoredTask> fn, boolean finalToo) {
    if (!isTaskId(taskId)) {
      return CompletableFuture.completedFuture(false);
    }
    UnaryOperator<StoredTask> guarded =
        s -> {
          if (!finalToo && s.task().status().isTerminal()) {
            throw Unchanged.INSTANCE;
          }
          return fn.apply(s);
        };
    return tasks
        .update(taskId, guarded)
        .handle(
            (written, e) -> {
              if (e == null) {
                return written.isPresent();
              }
              Throwable cause = e instanceof CompletionException ? e.getCause() : e;
              if (cause instanceof Unchanged) {
                return false;
              }
              throw e instanceof CompletionException ce ? ce : new CompletionException(e);
            });
  }

  private CompletableFuture<Optional<StoredTask>> stored(String taskId) {
    if (!isTaskId(taskId)) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    return tasks.get(taskId);
  }

  /** Whether {@code id} can name one of this store's tasks (anything else names none). */
  private static boolean isTaskId(String id) {
    return id != null && id.startsWith(ID_PREFIX + "-") && Formats.handleIdProblem(id).isEmpty();
  }

  private String now() {
    return clock.instant().toString();
  }

  /** Ends an update that has nothing to write (the task is final, or nothing applies). */
  private static final class Unchanged extends RuntimeException {
    private static final long serialVersionUID = 1L;
    static final Unchanged INSTANCE = new Unchanged();

    private Unchanged() {
      super("unchanged", null, false, false);
    }
  }

  /** How a {@link ClusterTaskStore} keeps its tasks. */
  public static final class Builder {
    private final Client client;
    private Duration ttl = Duration.ofHours(1);
    private Duration pollInterval = Duration.ofSeconds(1);
    private Clock clock = Clock.systemUTC();

    private Builder(Client client) {
      this.client = Objects.requireNonNull(client, "client");
    }

    /**
     * How long a task lives from its creation (default an hour; negative: unlimited, {@code
     * ttlSeconds: null}; at least a second otherwise).
     */
    public Builder ttl(Duration ttl) {
      Objects.requireNonNull(ttl, "ttl");
      if (!ttl.isNegative() && ttl.compareTo(Duration.ofSeconds(1)) < 0) {
        throw new IllegalArgumentException("ttl must be at least a second, or negative: " + ttl);
      }
      this.ttl = ttl;
      return this;
    }

    /** The polling interval tasks suggest (default a second). */
    public Builder pollInterval(Duration every) {
      if (every == null || every.isNegative() || every.isZero()) {
        throw new IllegalArgumentException("pollInterval must be positive: " + every);
      }
      this.pollInterval = every;
      return this;
    }

    /** The clock of the tasks' timestamps (tests). */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    public ClusterTaskStore build() {
      return new ClusterTaskStore(this);
    }
  }
}
