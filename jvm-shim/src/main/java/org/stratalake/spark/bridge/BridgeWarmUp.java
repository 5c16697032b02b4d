package org.stratalake.spark.bridge;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Starts the bridge's Python worker while a session starts, so the user's first query does not
 * wait for it.
 *
 * <p>The first bridge call of a JVM starts Spark's Python daemon for the bridge and forks a worker
 * that imports stratalake: ~1.8 s, half of a fresh session's first query (5 s). The session
 * extensions call {@link #extensionsApplied} as a session is constructed; once per JVM, a
 * background thread then makes a call that does nothing ({@link Operation#KEEP_ALIVE}), with that
 * session active (Spark picks the worker factory by its settings). The worker it started stays in
 * Spark's pool for the next call, and {@link BridgeKeepAlive} keeps it as after a user's call.
 *
 * <p>A user's call made while the warm-up call runs waits for it ({@link #awaitInFlight}): that
 * worker answers sooner than a second one forked for the user's call. Until the warm-up call has
 * begun (it needs the session's state, which the session's own thread may still be building), a
 * user's call does not wait. A warm-up that fails is silent: the user's first call starts a worker
 * as it would have, and reports what is wrong.
 *
 * <p>Beside that call, a second thread warms Spark itself: a session's first query loads ~4,000
 * classes of Spark's analyzer, optimizer, planner and code generator (~1 s of a fresh session's
 * first point lookup, measured). A query over literal rows, analyzed, planned and its code
 * generated but never run (no job), loads most of them while the user is not querying. The user's
 * first statement ({@link #userStatement}: the parser saw it, or it called the bridge) stops it
 * at its next step, since both would compete for the same cores.
 */
public final class BridgeWarmUp {
  // Longer than a worker start on a loaded machine, short enough not to hide a hung start.
  private static final long WAIT_SECONDS = 60;

  private static final AtomicBoolean STARTED = new AtomicBoolean();
  private static final CompletableFuture<Long> CALL = new CompletableFuture<>();
  private static volatile boolean calling;
  private static volatile Thread thread;
  private static volatile Thread queryThread;
  private static volatile boolean userStatement;
  private static volatile String queries = "not run";
  // Literal rows, a filter and a projection: what the first query of most sessions has.
  private static final String WARM_QUERY =
      "SELECT id, CONCAT(v, 'x') AS v FROM VALUES (1L, 'a'), (2L, 'b') AS t(id, v) WHERE id = 1";

  private BridgeWarmUp() {}

  /**
   * The session extensions were applied to a session being created: warms the bridge up, once
   * per JVM, with the JVM's default session once there is one (the session being created, in
   * PySpark, the spark-sql shell and Spark Connect; it is not passed to the extensions); then
   * runs {@code then} with it in the same background thread.
   */
  public static void extensionsApplied(
      java.util.function.Consumer<org.apache.spark.sql.classic.SparkSession> then) {
    if (!STARTED.compareAndSet(false, true)) {
      return;
    }
    Thread t = new Thread(() -> run(then), "stratalake-bridge-warm-up");
    t.setDaemon(true);
    thread = t;
    t.start();
  }

  private static void run(java.util.function.Consumer<org.apache.spark.sql.classic.SparkSession> then) {
    long pid = 0;
    org.apache.spark.sql.classic.SparkSession session = null;
    try {
      session = defaultSession();
      if (session != null) {
        org.apache.spark.sql.classic.SparkSession$.MODULE$.setActiveSession(session);
        // The session's state (a lazy value) first, then the call: until it begins, no user call
        // waits for it (the thread creating the session may be building that state).
        session.sessionState();
        org.apache.spark.sql.classic.SparkSession started = session;
        Thread q = new Thread(() -> warmQueries(started), "stratalake-query-warm-up");
        q.setDaemon(true);
        queryThread = q;
        q.start();
        calling = true;
        pid = BridgeKeepAlive.call();
        BridgeKeepAlive.warmedUp(session);
      }
    } catch (RuntimeException | LinkageError e) { // LinkageError: a Spark without these calls
      // The user's first call starts a worker as it would have, and reports the problem.
    } finally {
      CALL.complete(pid);
    }
    try {
      if (pid > 0) {
        then.accept(session); // after the call: user calls do not wait for this part
      }
    } catch (RuntimeException | LinkageError e) {
      // Whatever needed it does it again, and reports the problem.
    } finally {
      org.apache.spark.sql.classic.SparkSession$.MODULE$.clearActiveSession();
    }
  }

  private static void warmQueries(org.apache.spark.sql.classic.SparkSession session) {
    queries = "running";
    String outcome = "failed";
    try {
      org.apache.spark.sql.classic.SparkSession$.MODULE$.setActiveSession(session);
      org.apache.spark.sql.execution.QueryExecution qe = null;
      org.apache.spark.sql.execution.SparkPlan plan = null;
      for (int step = 0; step < 3; step++) {
        if (userStatement) {
          outcome = "stopped";
          return;
        }
        if (step == 0) {
          qe = session.sql(WARM_QUERY).queryExecution(); // parsed and analyzed
        } else if (step == 1) {
          plan = qe.executedPlan(); // optimized and planned
        } else {
          plan.execute(); // an RDD, never computed: its code generated and compiled, no job
        }
      }
      outcome = "done";
    } catch (RuntimeException | LinkageError e) {
      // Nothing depends on it: the user's first query loads the classes itself.
    } finally {
      queries = outcome;
      org.apache.spark.sql.classic.SparkSession$.MODULE$.clearActiveSession();
    }
  }

  /**
   * A user's statement began (the parser saw it, or it called the bridge): the warm-up of
   * Spark's query classes stops at its next step. The warm-up's own threads do not count.
   */
  public static void userStatement() {
    Thread current = Thread.currentThread();
    if (current != thread && current != queryThread) {
      userStatement = true;
    }
  }

  /**
   * What became of the warm-up of Spark's query classes: "not run" (no session yet), "running",
   * "stopped" (by a user's statement), "failed" or "done". For tests and diagnostics.
   */
  public static String queries() {
    return queries;
  }

  /** The JVM's default session, waited for while the session is constructed; null if none. */
  private static org.apache.spark.sql.classic.SparkSession defaultSession() {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
    while (System.nanoTime() < deadline) {
      scala.Option<org.apache.spark.sql.classic.SparkSession> s =
          org.apache.spark.sql.classic.SparkSession$.MODULE$.getDefaultSession();
      if (s.isDefined()) {
        return s.get().sparkContext().isStopped() ? null : s.get();
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return null;
      }
    }
    return null;
  }

  /** Before a user's bridge call: waits for the warm-up call, if it is running. */
  static void awaitInFlight() {
    userStatement();
    if (!calling || CALL.isDone() || Thread.currentThread() == thread) {
      return;
    }
    try {
      CALL.get(WAIT_SECONDS, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
      // The user's call starts its own worker.
    }
  }

  /** Whether the warm-up call has begun (it may have ended). For tests and diagnostics. */
  public static boolean callBegun() {
    return calling;
  }

  /**
   * The process id of the Python worker the warm-up started: 0 when there was none (no session
   * yet, or the call failed), -1 while it runs. For tests and diagnostics.
   */
  public static long workerPid() {
    if (!STARTED.get()) {
      return 0;
    }
    return CALL.isDone() ? CALL.join() : -1;
  }
}
