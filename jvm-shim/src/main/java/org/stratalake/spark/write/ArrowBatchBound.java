package org.stratalake.spark.write;

import java.io.IOException;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DayTimeIntervalType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.types.YearMonthIntervalType;

/**
 * Spark's per-row byte check of the Arrow batches it sends to the Python writers, skipped where
 * the write's schema already bounds every batch below the limit.
 *
 * <p>Spark caps a batch at {@code spark.sql.execution.arrow.maxRecordsPerBatch} rows and {@code
 * spark.sql.execution.arrow.maxBytesPerBatch} bytes. To hold the byte cap it sums the sizes of
 * every column's Arrow vectors after every row; only the value {@code Integer.MAX_VALUE} turns
 * that off. In a 20M-row load of six columns the check took 8 of the JVM's 24 CPU-seconds
 * (BENCHMARKS.md). When every column has a fixed width, no batch of the capped row count can reach
 * the byte cap, so the check decides nothing and is skipped for the Python writer's runner only:
 * the setting is lifted in the task's properties while Spark builds that runner and restored
 * before any other operator of the task reads it. Any variable-width column (strings, binaries,
 * arrays, maps, structs) keeps Spark's check.
 */
public final class ArrowBatchBound {
  static final String MAX_BYTES = "spark.sql.execution.arrow.maxBytesPerBatch";
  private static final String NO_CHECK = Integer.toString(Integer.MAX_VALUE);
  // Python writers of this JVM built without the check (tests read it: local mode runs the tasks here)
  private static final AtomicLong LIFTED = new AtomicLong();

  private ArrowBatchBound() {}

  /**
   * The most Arrow bytes one row of {@code schema} takes (values and a validity byte per column,
   * a bit rounded up), or -1 when a column has no fixed width.
   */
  public static long rowBytes(StructType schema) {
    long total = 0;
    for (StructField f : schema.fields()) {
      long width = valueBytes(f.dataType());
      if (width < 0) {
        return -1;
      }
      total += width + 1;
    }
    return total;
  }

  private static long valueBytes(DataType t) {
    if (t instanceof BooleanType || t instanceof ByteType) {
      return 1;
    }
    if (t instanceof ShortType) {
      return 2;
    }
    if (t instanceof IntegerType
        || t instanceof FloatType
        || t instanceof DateType
        || t instanceof YearMonthIntervalType) {
      return 4;
    }
    if (t instanceof LongType
        || t instanceof DoubleType
        || t instanceof TimestampType
        || t instanceof TimestampNTZType
        || t instanceof DayTimeIntervalType) {
      return 8;
    }
    if (t instanceof DecimalType) {
      return 16; // Arrow's decimal128
    }
    return -1;
  }

  /**
   * Whether Spark's byte check cannot end a batch of {@code schema}'s rows under {@code conf}: the
   * row cap times the widest row, doubled for the vectors' rounding, is within the byte cap.
   */
  public static boolean redundant(StructType schema, SQLConf conf) {
    long maxBytes = conf.arrowMaxBytesPerBatch();
    int maxRecords = conf.arrowMaxRecordsPerBatch();
    long row = rowBytes(schema);
    return maxBytes < Integer.MAX_VALUE
        && maxRecords > 0
        && row > 0
        && 2L * row * maxRecords <= maxBytes;
  }

  /** How many task writers of this JVM built their Python runner without the check. */
  public static long liftedWriters() {
    return LIFTED.get();
  }

  /** {@code delegate}, whose writers build their Python runner without the redundant check. */
  static DataWriterFactory withoutRedundantCheck(DataWriterFactory delegate) {
    return new Factory(delegate);
  }

  private static final class Factory implements DataWriterFactory {
    private static final long serialVersionUID = 1L;
    private final DataWriterFactory delegate;

    Factory(DataWriterFactory delegate) {
      this.delegate = delegate;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
      return new Writer(delegate.createWriter(partitionId, taskId));
    }
  }

  /**
   * Lifts the setting in this task's properties (which Spark's executors read their SQL settings
   * from) for the delegate's {@code writeAll}, which builds the Python runner before it pulls the
   * first row; the first pull restores it, so operators feeding this writer in the same task
   * (their runners built on that pull) keep Spark's check.
   */
  private static final class Writer implements DataWriter<InternalRow> {
    private final DataWriter<InternalRow> delegate;

    Writer(DataWriter<InternalRow> delegate) {
      this.delegate = delegate;
    }

    @Override
    public void writeAll(java.util.Iterator<InternalRow> records) throws IOException {
      TaskContext task = TaskContext.get();
      if (task == null) {
        delegate.writeAll(records);
        return;
      }
      Properties props = task.getLocalProperties();
      String before = props.getProperty(MAX_BYTES);
      Runnable restore =
          () -> {
            if (before == null) {
              props.remove(MAX_BYTES);
            } else {
              props.setProperty(MAX_BYTES, before);
            }
          };
      props.setProperty(MAX_BYTES, NO_CHECK);
      LIFTED.incrementAndGet();
      try {
        delegate.writeAll(
            new java.util.Iterator<InternalRow>() {
              private boolean restored;

              @Override
              public boolean hasNext() {
                restoreOnce();
                return records.hasNext();
              }

              @Override
              public InternalRow next() {
                restoreOnce();
                return records.next();
              }

              private void restoreOnce() {
                if (!restored) {
                  restored = true;
                  restore.run();
                }
              }
            });
      } finally {
        restore.run();
      }
    }

    @Override
    public void write(InternalRow record) throws IOException {
      delegate.write(record);
    }

    @Override
    public void write(InternalRow metadata, InternalRow record) throws IOException {
      delegate.write(metadata, record);
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
      return delegate.commit();
    }

    @Override
    public void abort() throws IOException {
      delegate.abort();
    }

    @Override
    public void close() throws IOException {
      delegate.close();
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
      return delegate.currentMetricsValues();
    }
  }
}
