package org.stratalake.spark.scan;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.HasPartitionKey;
import org.apache.spark.sql.execution.datasources.v2.python.PythonInputPartition;

/**
 * One bucket split: the pickled partition Spark's Python reader consumes, plus the split's facts
 * (from the Python planner) for the scan's metrics and its bucket id as the partition key of
 * storage-partitioned joins. A split that needs no merge also lists its data files ({@link
 * #nativeFiles}, in output order): the JVM then reads them itself with Spark's Parquet reader.
 */
public final class StrataLakeInputPartition implements HasPartitionKey {
  private static final long serialVersionUID = 1L;

  final PythonInputPartition python;
  final int bucket;
  final long files;
  final long bytes;
  final long rows;
  final long runs;
  /** Splits read here: more than one when the planner packed small native splits together. */
  final int splits;
  /** The split's Parquet files for a native read, or null: read (and merged) by Python. */
  final NativeFile[] nativeFiles;
  /**
   * For native files that hold superseded rows (key-merged splits): what the Python reader in
   * "superseded" mode reads to list them (the splits, each with the index of its first file in
   * {@link #nativeFiles}); null when none does. See {@link SupersededRows}.
   */
  final PythonInputPartition superseded;
  /** The number of key-merged splits here. */
  final int keyMergedSplits;

  StrataLakeInputPartition(
      PythonInputPartition python,
      int bucket,
      long files,
      long bytes,
      long rows,
      long runs,
      int splits,
      NativeFile[] nativeFiles,
      PythonInputPartition superseded,
      int keyMergedSplits) {
    this.superseded = superseded;
    this.keyMergedSplits = keyMergedSplits;
    this.splits = splits;
    this.nativeFiles = nativeFiles;
    this.python = python;
    this.bucket = bucket;
    this.files = files;
    this.bytes = bytes;
    this.rows = rows;
    this.runs = runs;
  }

  /** The bucket id: the value of the scan's reported bucket transform for every row here. */
  @Override
  public InternalRow partitionKey() {
    return new GenericInternalRow(new Object[] {bucket});
  }

  @Override
  public String[] preferredLocations() {
    return new String[0];
  }

  boolean isNative() {
    return nativeFiles != null;
  }

  /**
   * One data file of a native split: its absolute URI, size and row count, and where its deletion
   * vector is serialized (index file URI, offset of the size int, size), if it has one.
   */
  static final class NativeFile implements java.io.Serializable {
    private static final long serialVersionUID = 1L;

    final String path;
    final long size;
    final long rows;
    final String dvPath;
    final long dvOffset;
    final int dvLength;

    NativeFile(String path, long size, long rows, String dvPath, long dvOffset, int dvLength) {
      this.path = path;
      this.size = size;
      this.rows = rows;
      this.dvPath = dvPath;
      this.dvOffset = dvOffset;
      this.dvLength = dvLength;
    }
  }
}
