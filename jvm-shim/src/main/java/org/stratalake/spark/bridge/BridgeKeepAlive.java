package org.stratalake.spark.bridge;

import java.lang.ref.WeakReference;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.network.util.JavaUtils;

/**
 * Keeps the bridge's pooled Python worker alive through a pause in the user's work.
 *
 * <p>Spark reaps the idle workers of a worker factory that served nothing for 60 seconds
 * ({@code PythonWorkerFactory.IDLE_WORKER_TIMEOUT_NS}, not a setting). The bridge's next call then
 * forks a worker that imports stratalake again: the first query after a minute's pause in a
 * notebook took 1.2 s against 0.15 s. So after 40 s without a bridge call, a background thread
 * makes a call that does nothing ({@link Operation#KEEP_ALIVE}), for as long as the user's last
 * call is at most {@value #CONF} old (a session setting of the user's last call; default 30
 * minutes, 0 turns it off), after which Spark reaps the worker as it would have.
 *
 * <p>The call is made with the session of the user's last call active: Spark's worker factory is
 * chosen by settings of that session, and another one would keep some other worker alive.
 */
public final class BridgeKeepAlive {
  /**
   * SQL setting: how long after the user's last bridge call the worker is kept alive (a session
   * setting, not {@code spark.stratalake.*}: those are the session's table options).
   */
  public static final String CONF = "stratalake.bridge.keep-alive";

  private static final String DEFAULT = "30min";
  // Spark's reaper checks every 10 s for 60 s of quiet; a call after 40 s, checked every 10 s,
  // lands 40-50 s after the last one.
  private static final long QUIET_NANOS = TimeUnit.SECONDS.toNanos(40);
  private static final long CHECK_SECONDS = 10;

  private static final AtomicInteger IN_FLIGHT = new AtomicInteger();
  private static volatile long lastEnd = System.nanoTime();
  private static volatile long lastUserCall = System.nanoTime();
  private static volatile WeakReference<org.apache.spark.sql.classic.SparkSession> lastSession =
      new WeakReference<>(null);
  private static volatile ScheduledExecutorService keeper;

  private BridgeKeepAlive() {}

  /**
   * The keep-alive {@value #CONF} of {@code conf} in ms (0: off), or an error naming the setting
   * when its value is not a duration.
   */
  static long keepAliveMs(org.apache.spark.sql.internal.SQLConf conf) {
    String value = conf.getConfString(CONF, DEFAULT);
    try {
      long ms = JavaUtils.timeStringAsMs(value.trim());
      if (ms < 0) {
        throw new NumberFormatException("negative");
      }
      return ms;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          CONF
              + "="
              + value
              + " is not a duration: give one such as 30min or 90s (how long after the last"
              + " query the catalog keeps its Python worker), or 0 to let Spark stop it after a"
              + " minute of quiet",
          e);
    }
  }

  /** A bridge call of {@code op} begins (on the caller's thread, its session active). */
  static void begin(Operation<?, ?> op) {
    if (op != Operation.KEEP_ALIVE) {
      // A bad setting is refused by name before anything runs.
      keepAliveMs(org.apache.spark.sql.internal.SQLConf.get());
    }
    IN_FLIGHT.incrementAndGet();
    if (op == Operation.KEEP_ALIVE) {
      return;
    }
    lastUserCall = System.nanoTime();
    scala.Option<org.apache.spark.sql.classic.SparkSession> active =
        org.apache.spark.sql.classic.SparkSession$.MODULE$.getActiveSession();
    if (active.isDefined() && lastSession.get() != active.get()) {
      lastSession = new WeakReference<>(active.get());
    }
    if (keeper == null) {
      start();
    }
  }

  /**
   * The warm-up call of {@code session} ended ({@link BridgeWarmUp}): its worker is kept as after
   * a user's call, so a first query a few minutes later still finds it.
   */
  static void warmedUp(org.apache.spark.sql.classic.SparkSession session) {
    lastUserCall = System.nanoTime();
    if (lastSession.get() == null) {
      lastSession = new WeakReference<>(session);
    }
    if (keeper == null) {
      start();
    }
  }

  /** The bridge call begun last ended (answered or failed). */
  static void end() {
    lastEnd = System.nanoTime();
    IN_FLIGHT.decrementAndGet();
  }

  private static synchronized void start() {
    if (keeper != null) {
      return;
    }
    keeper =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "stratalake-bridge-keep-alive");
              t.setDaemon(true);
              return t;
            });
    keeper.scheduleWithFixedDelay(
        BridgeKeepAlive::tick, CHECK_SECONDS, CHECK_SECONDS, TimeUnit.SECONDS);
  }

  /** One check of the keeper thread: a keep-alive call when one is due. */
  private static void tick() {
    try {
      long now = System.nanoTime();
      if (IN_FLIGHT.get() > 0 || now - lastEnd < QUIET_NANOS) {
        return; // a call is running, or one ended recently: the worker is not idle for long
      }
      org.apache.spark.sql.classic.SparkSession session = lastSession.get();
      if (session == null || session.sparkContext().isStopped()) {
        return;
      }
      long keepMs = keepAliveMs(session.sessionState().conf());
      if (keepMs == 0 || now - lastUserCall > TimeUnit.MILLISECONDS.toNanos(keepMs)) {
        return;
      }
      org.apache.spark.sql.classic.SparkSession$.MODULE$.setActiveSession(session);
      try {
        call();
      } finally {
        org.apache.spark.sql.classic.SparkSession$.MODULE$.clearActiveSession();
      }
    } catch (RuntimeException e) {
      // The next user call starts a worker as it would without this thread, and reports any
      // problem of the bridge itself.
    }
  }

  /**
   * Makes one keep-alive call now and returns the process id of the Python worker that answered
   * (for tests and diagnostics: the same id across a pause is the same worker).
   */
  public static long call() {
    return PythonBridge.call(Operation.KEEP_ALIVE, new Messages.KeepAlive());
  }
}
