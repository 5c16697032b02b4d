package org.stratalake.spark.scan;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/**
 * The scan's custom metrics (shown on the scan node in the Spark UI's SQL tab).
 *
 * <p>Files, bytes, sorted runs and rows before the merge are facts of each split that the Python
 * planner computed; rows after the merge are counted as they leave the Python reader. Spark
 * instantiates metric classes by name to aggregate them, hence the public no-argument classes.
 *
 * <p>Spark <em>sets</em> a task's metric to the value a reader reports, and with
 * storage-partitioned reads one task runs several readers (one per split of its bucket), so the
 * values are kept per task attempt and every reader reports the task's running totals.
 */
public final class ScanMetrics {
  static final String FILES = "stratalakeFilesRead";
  static final String BYTES = "stratalakeBytesRead";
  static final String RUNS = "stratalakeSortedRuns";
  static final String ROWS_BEFORE = "stratalakeRowsBeforeMerge";
  static final String ROWS_AFTER = "stratalakeRowsAfterMerge";
  static final String NATIVE_SPLITS = "stratalakeNativeSplits";
  static final String PYTHON_SPLITS = "stratalakePythonSplits";
  static final String KEY_MERGED_SPLITS = "stratalakeKeyMergedSplits";
  private static final String[] NAMES = {
    FILES, BYTES, RUNS, ROWS_BEFORE, ROWS_AFTER, NATIVE_SPLITS, PYTHON_SPLITS, KEY_MERGED_SPLITS
  };

  private ScanMetrics() {}

  /** The metrics a stratalake scan declares. */
  static CustomMetric[] supported() {
    return new CustomMetric[] {
      new FilesRead(),
      new BytesRead(),
      new SortedRuns(),
      new RowsBeforeMerge(),
      new RowsAfterMerge(),
      new NativeSplits(),
      new PythonSplits(),
      new KeyMergedSplits()
    };
  }

  public static final class KeyMergedSplits extends CustomSumMetric {
    @Override
    public String name() {
      return KEY_MERGED_SPLITS;
    }

    @Override
    public String description() {
      return "stratalake splits read natively minus the rows a Python merge of their keys dropped";
    }
  }

  public static final class NativeSplits extends CustomSumMetric {
    @Override
    public String name() {
      return NATIVE_SPLITS;
    }

    @Override
    public String description() {
      return "stratalake splits read natively (Spark's Parquet reader, no merge)";
    }
  }

  public static final class PythonSplits extends CustomSumMetric {
    @Override
    public String name() {
      return PYTHON_SPLITS;
    }

    @Override
    public String description() {
      return "stratalake splits read (and merged) by Python";
    }
  }

  public static final class FilesRead extends CustomSumMetric {
    @Override
    public String name() {
      return FILES;
    }

    @Override
    public String description() {
      return "stratalake data files read";
    }
  }

  public static final class BytesRead extends CustomSumMetric {
    @Override
    public String name() {
      return BYTES;
    }

    @Override
    public String description() {
      return "stratalake bytes read (data file bytes of the columns read, estimated)";
    }
  }

  public static final class SortedRuns extends CustomSumMetric {
    @Override
    public String name() {
      return RUNS;
    }

    @Override
    public String description() {
      return "stratalake sorted runs merged";
    }
  }

  public static final class RowsBeforeMerge extends CustomSumMetric {
    @Override
    public String name() {
      return ROWS_BEFORE;
    }

    @Override
    public String description() {
      return "stratalake rows before merge";
    }
  }

  public static final class RowsAfterMerge extends CustomSumMetric {
    @Override
    public String name() {
      return ROWS_AFTER;
    }

    @Override
    public String description() {
      return "stratalake rows after merge";
    }
  }

  private static final Map<Long, long[]> TASK_TOTALS = new ConcurrentHashMap<>();

  /** The running totals of the current task (a private array outside a task). */
  static long[] taskTotals() {
    TaskContext ctx = TaskContext.get();
    if (ctx == null) {
      return new long[NAMES.length];
    }
    long id = ctx.taskAttemptId();
    long[] totals = TASK_TOTALS.get(id);
    if (totals == null) {
      totals = new long[NAMES.length];
      TASK_TOTALS.put(id, totals);
      ctx.addTaskCompletionListener(
          new org.apache.spark.util.TaskCompletionListener() {
            @Override
            public void onTaskCompletion(TaskContext context) {
              TASK_TOTALS.remove(id);
            }
          });
    }
    return totals;
  }

  static final int I_FILES = 0;
  static final int I_BYTES = 1;
  static final int I_RUNS = 2;
  static final int I_ROWS_BEFORE = 3;
  static final int I_ROWS_AFTER = 4;
  static final int I_NATIVE_SPLITS = 5;
  static final int I_PYTHON_SPLITS = 6;
  static final int I_KEY_MERGED_SPLITS = 7;

  /** A private array of totals, counted nowhere. */
  static long[] scratch() {
    return new long[NAMES.length];
  }

  static CustomTaskMetric[] values(long[] totals) {
    CustomTaskMetric[] out = new CustomTaskMetric[NAMES.length];
    for (int i = 0; i < NAMES.length; i++) {
      String name = NAMES[i];
      long value = totals[i];
      out[i] =
          new CustomTaskMetric() {
            @Override
            public String name() {
              return name;
            }

            @Override
            public long value() {
              return value;
            }
          };
    }
    return out;
  }
}
