package org.stratalake.spark.catalog;

import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.spark.JobExecutionStatus;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkJobInfo;
import org.apache.spark.SparkStageInfo;
import org.apache.spark.SparkStatusTracker;
import scala.Option;

/**
 * Runs a job Python described and, if it fails, returns only once its tasks have ended.
 *
 * <p>Spark fails a job as soon as one task is out of attempts and kills the others without
 * waiting for them: a killed Python task's worker goes on writing until Spark destroys it, seconds
 * later. The bridge's cleanup after a failed job deletes what the job's task attempts wrote; run
 * before they end, it misses the files they write after it (Python's attempts check for that, but
 * a worker destroyed in the middle of a file cannot). So the job's tasks are tagged, and a failure
 * is rethrown once Spark's status store reports no task of the job running.
 */
final class JobTasks {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(JobTasks.class);
  // Spark destroys a killed task's Python worker within ~4 s (two 2 s waits); a JVM task that
  // ignores its kill could run on: then the cleanup runs anyway (what it misses is an orphan).
  private static final long MAX_WAIT_SECONDS = 60;
  // The status store hears of a job from Spark's listener bus, after the job started: a failure
  // with no job in the store after this long came before any job (e.g. in planning).
  private static final long NO_JOB_GRACE_MILLIS = 2_000;

  private JobTasks() {}

  static <T> T run(SparkContext sc, Supplier<T> job) {
    String tag = "stratalake-job-" + UUID.randomUUID();
    sc.addJobTag(tag);
    try {
      return job.get();
    } catch (RuntimeException | Error e) {
      try {
        awaitEnded(sc, tag);
      } catch (RuntimeException waitFailed) {
        e.addSuppressed(waitFailed);
      }
      throw e;
    } finally {
      sc.removeJobTag(tag);
    }
  }

  private static void awaitEnded(SparkContext sc, String tag) {
    SparkStatusTracker tracker = sc.statusTracker();
    long start = System.nanoTime();
    while (true) {
      long waited = System.nanoTime() - start;
      int[] jobs = tracker.getJobIdsForTag(tag);
      boolean done =
          jobs.length == 0
              ? waited > TimeUnit.MILLISECONDS.toNanos(NO_JOB_GRACE_MILLIS)
              : ended(tracker, jobs);
      if (done) {
        return;
      }
      if (waited > TimeUnit.SECONDS.toNanos(MAX_WAIT_SECONDS)) {
        LOG.warn(
            "stratalake: tasks of a failed job (tag {}) still run after {} s; cleaning up anyway",
            tag,
            MAX_WAIT_SECONDS);
        return;
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** Whether the store has seen each job end and no task of its stages is running. */
  private static boolean ended(SparkStatusTracker tracker, int[] jobs) {
    for (int id : jobs) {
      Option<SparkJobInfo> job = tracker.getJobInfo(id);
      if (job.isEmpty()
          || job.get().status() == JobExecutionStatus.RUNNING
          || job.get().status() == JobExecutionStatus.UNKNOWN) {
        return false;
      }
      for (int stageId : job.get().stageIds()) {
        Option<SparkStageInfo> stage = tracker.getStageInfo(stageId);
        if (stage.isDefined() && stage.get().numActiveTasks() > 0) {
          return false;
        }
      }
    }
    return true;
  }
}
