package org.stratalake.spark.write;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.distributions.Distribution;
import org.apache.spark.sql.connector.distributions.Distributions;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.connector.expressions.filter.AlwaysTrue;
import org.apache.spark.sql.connector.expressions.filter.And;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.RequiresDistributionAndOrdering;
import org.apache.spark.sql.connector.write.SupportsDynamicOverwrite;
import org.apache.spark.sql.connector.write.SupportsOverwriteV2;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.WriteSummary;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.stratalake.spark.bridge.Messages.WriteDistribution;
import org.stratalake.spark.bridge.PythonBridge;
import org.stratalake.spark.source.LakeSource;
import org.stratalake.spark.source.LakeTable;
import org.stratalake.spark.functions.BucketFunction;
import org.stratalake.spark.functions.SliceFunction;

/**
 * Collects the overwrite mode Spark chooses, then builds the Python source's write with that mode
 * in its options ("stratalake.write.mode": append | truncate | static | dynamic, plus the static
 * partition spec as JSON). Python's writer only sees an overwrite flag, so the mode travels as an
 * option; the Python commit turns it into one snapshot.
 */
public final class StrataLakeWriteBuilder
    implements WriteBuilder, SupportsOverwriteV2, SupportsDynamicOverwrite {
  static final String MODE = "stratalake.write.mode";
  static final String STATIC_PARTITION = "stratalake.write.static-partition";
  /**
   * Names the column of change records' row kinds ('+I', '-U', '+U', '-D'): set by the row-level
   * rewrite (sql.RowLevelRewrite), whose writes append change records.
   */
  public static final String ROW_KIND_OPTION = "stratalake.write.row-kind-column";
  /** A DELETE by a key list: the key columns its rows carry (JSON list; spark/source.py). */
  public static final String DELETE_KEYS_OPTION = "stratalake.write.delete-keys";
  static final String QUERY_ID = "stratalake.write.query-id";
  static final String DYNAMIC_ASSIGNERS = "stratalake.write.dynamic-assigners";
  static final String DYNAMIC_FOREIGN_LEVEL0 = "stratalake.write.dynamic-foreign-level0";
  private static final org.slf4j.Logger LOG =
      org.slf4j.LoggerFactory.getLogger(StrataLakeWriteBuilder.class);

  private final LakeTable table;
  private final LogicalWriteInfo info;
  private String mode = "append";
  private String staticPartition = null;

  public StrataLakeWriteBuilder(LakeTable table, LogicalWriteInfo info) {
    this.table = table;
    this.info = info;
  }

  @Override
  public WriteBuilder truncate() {
    mode = "truncate";
    return this;
  }

  @Override
  public WriteBuilder overwriteDynamicPartitions() {
    mode = "dynamic";
    return this;
  }

  /** Only "partition column = literal" conjunctions map onto Paimon partition overwrite. */
  @Override
  public boolean canOverwrite(Predicate[] predicates) {
    return partitionSpec(predicates) != null;
  }

  @Override
  public WriteBuilder overwrite(Predicate[] predicates) {
    ObjectNode spec = partitionSpec(predicates);
    if (spec == null) {
      throw new UnsupportedOperationException(
          "stratalake: overwrite is only supported by partition values, not by "
              + java.util.Arrays.toString(predicates));
    }
    if (spec.isEmpty()) {
      mode = "truncate";
    } else {
      mode = "static";
      staticPartition = spec.toString();
    }
    return this;
  }

  private ObjectNode partitionSpec(Predicate[] predicates) {
    ObjectNode spec = PythonBridge.JSON.createObjectNode();
    for (Predicate p : predicates) {
      if (!addToSpec(p, spec)) {
        return null;
      }
    }
    return spec;
  }

  private boolean addToSpec(Predicate p, ObjectNode spec) {
    if (p instanceof AlwaysTrue) {
      return true;
    }
    if (p instanceof And) {
      return addToSpec(((And) p).left(), spec) && addToSpec(((And) p).right(), spec);
    }
    Expression[] args = p.children();
    // Spark states a static partition as "col <=> value" (or "=", depending on the path).
    if (!("=".equals(p.name()) || "<=>".equals(p.name())) || args.length != 2) {
      return false;
    }
    if (!(args[0] instanceof NamedReference) || !(args[1] instanceof Literal)) {
      return false;
    }
    String column = String.join(".", ((NamedReference) args[0]).fieldNames());
    if (!table.partitionKeys().contains(column)) {
      return false;
    }
    Literal<?> lit = (Literal<?>) args[1];
    ObjectNode value = spec.putObject(column);
    // Catalyst's internal value (UTF8String, days, micros...) printed plus its type is enough for
    // Python to rebuild the partition value.
    value.put("value", lit.value() == null ? null : lit.value().toString());
    value.put("type", lit.dataType().typeName());
    return true;
  }

  @Override
  public Write build() {
    Map<String, String> options = table.withSourceOptions(info.options().asCaseSensitiveMap());
    options.put(MODE, mode);
    // A streaming query's id survives restarts from its checkpoint: Python derives the commit
    // user from it, so a replayed micro-batch is recognised as already committed.
    if (info.queryId() != null) {
      options.put(QUERY_ID, info.queryId());
    }
    if (staticPartition != null) {
      options.put(STATIC_PARTITION, staticPartition);
    }
    // A DELETE removing a key table's stored rows writes no row, only the positions it found
    // (row_delete.py): no clustering by bucket (its rows carry no key), no slices.
    boolean positionsOnly =
        !table.isAppendTable()
            && options.containsKey(ROW_KIND_OPTION)
            && java.util.Arrays.asList(info.schema().fieldNames()).contains(LakeTable.FILE_COLUMN);
    WriteDistribution spec =
        positionsOnly ? new WriteDistribution("none", null, null, null, null, null, null, null)
            : table.writeDistribution();
    int assigners = numAssigners(spec);
    Runnable afterCommit = null;
    if (assigners > 1 && Boolean.TRUE.equals(spec.ownersOnly())) {
      // Lookup, deletion-vector, first-row and full-compaction tables: a bucket that takes keys
      // of a slice other than its owner's gets level-0 files the owner's compaction does not see
      // (no changelog yet, invisible to deletion-vector reads). So N shrinks to what the table's
      // keys allow; where that is 1 (a single assigner filled it, e.g. pypaimon), N stays and
      // the buckets' level-0 files are compacted by a distributed job right after the commit
      // (Paimon's writers commit an APPEND and then a COMPACT snapshot as well).
      int consistent = table.ownerConsistentAssigners(assigners);
      if (consistent > 1) {
        assigners = consistent;
      } else {
        options.put(DYNAMIC_FOREIGN_LEVEL0, "true");
        afterCommit = table::compactLevel0;
      }
    }
    if (assigners > 0) {
      options.put(DYNAMIC_ASSIGNERS, Integer.toString(assigners));
    }
    LogicalWriteInfo withOptions = new WriteInfo(info, new CaseInsensitiveStringMap(options));
    WriteBuilder python =
        ((SupportsWrite) LakeSource.pythonTable(info.schema())).newWriteBuilder(withOptions);
    if (!"append".equals(mode)) {
      python = ((SupportsTruncate) python).truncate();
    }
    // Row-level DML sends change records (a row-kind column): never native.
    NativeAppendWrite.Settings nativeWrite =
        options.containsKey(ROW_KIND_OPTION)
            ? null
            : NativeAppendWrite.settings(table.nativeAppend(), info.schema());
    // Row-level statements addressing rows by data file and position: the commit goes through
    // the bridge, which rewrites copy-on-write files in a Spark job first (delete_job.py).
    boolean byPosition =
        options.containsKey(ROW_KIND_OPTION)
            && java.util.Arrays.asList(info.schema().fieldNames()).contains(LakeTable.FILE_COLUMN);
    // A key table's first primary-key column is never null in its rows: a row of nulls then
    // marks padding (ArrowBatchBound). Not for a DELETE's positions, whose rows carry no key,
    // nor a key list's, which may leave partition columns null.
    int marker =
        table.isAppendTable() || positionsOnly || options.containsKey(DELETE_KEYS_OPTION)
            ? -1
            : firstKey(info.schema());
    // A key list's candidates are few bytes per key, so Spark's adaptive execution would put them
    // in one task; each bucket's check reads that bucket's keys, so the buckets' tasks stay apart.
    int tasks = 0;
    if (options.containsKey(DELETE_KEYS_OPTION) && spec.numBuckets() != null && spec.numBuckets() > 0) {
      tasks = Math.min(SQLConf.get().numShufflePartitions(), spec.numBuckets());
    }
    return new ClusteredWrite(
        python.build(),
        info.schema(),
        marker,
        tasks,
        table.name(),
        clustering(spec, assigners),
        afterCommit,
        nativeWrite,
        table::compactIfDue,
        table::commitSchemaMerge,
        byPosition ? messages -> table.commitRowLevel(pickles(messages)) : null);
  }

  /** The ordinal in {@code schema} of the table's first primary-key column; -1 when absent. */
  private int firstKey(StructType schema) {
    if (table.primaryKeys().isEmpty()) {
      return -1;
    }
    String key = table.primaryKeys().get(0);
    String[] names = schema.fieldNames();
    for (int i = 0; i < names.length; i++) {
      if (names[i].equalsIgnoreCase(key)) {
        return i;
      }
    }
    return -1;
  }

  /** Python's task messages as Spark holds them (pickles), base64-encoded for the bridge. */
  private static List<String> pickles(WriterCommitMessage[] messages) {
    List<String> out = new ArrayList<>();
    for (WriterCommitMessage m : messages) {
      out.add(
          java.util.Base64.getEncoder()
              .encodeToString(
                  ((org.apache.spark.sql.execution.datasources.v2.python.PythonWriterCommitMessage) m)
                      .pickledMessage()));
    }
    return out;
  }

  /**
   * Dynamic-bucket tables: the number of assigner slices, fixed here at planning time (a
   * streaming query keeps it for every micro-batch): the table's
   * dynamic-bucket.assigner-parallelism, else the session's shuffle partitions (Paimon's Spark
   * writer takes Spark's parallelism), capped as Python says (initial-buckets, max-buckets) and,
   * for tables whose writers compact what they write, by the hash index (see build). 0 for other
   * tables.
   */
  private static int numAssigners(WriteDistribution spec) {
    if (spec == null || !"dynamic".equals(spec.kind())) {
      return 0;
    }
    int n = spec.numAssigners() == null ? 0 : spec.numAssigners();
    if (n <= 0) {
      n = org.apache.spark.sql.internal.SQLConf.get().numShufflePartitions();
    }
    int cap = spec.maxAssigners() == null ? Integer.MAX_VALUE : spec.maxAssigners();
    return Math.max(1, Math.min(n, cap));
  }

  /**
   * What Spark clusters rows by before the Python writer: every row of one (partition, bucket)
   * must reach the same task (one writer per bucket, whatever the shuffle partition count, AQE
   * coalescing or the input's partitioning). Python decides the kind
   * (bridge_handlers.write_distribution); clustering by a subset still satisfies it, since rows
   * that agree on all expressions agree on any subset.
   */
  private static List<String> orEmpty(List<String> values) {
    return values == null ? List.of() : values;
  }

  private Expression[] clustering(WriteDistribution spec, int assigners) {
    String kind = spec == null ? "columns" : spec.kind();
    List<Expression> out = new ArrayList<>();
    switch (kind) {
      case "none":
        break;
      case "dynamic":
        // Paimon's assigner slice of the trimmed key's hash, |hash % N|: a task holds whole
        // slices and assigns their keys (dynamic_bucket.py); the partition columns make the
        // slice per partition, as Paimon's assigner id is.
        List<String> partitions = orEmpty(spec.partitionKeys());
        for (String p : partitions) {
          out.add(Expressions.column(p));
        }
        List<Expression> slice = new ArrayList<>();
        slice.add(Expressions.literal(assigners));
        if (partitions.isEmpty()) {
          // By the slice alone: the slice's channel among the shuffle partitions Spark will use
          // (SliceFunction), so slice s reaches partition s mod M; AQE may still coalesce
          // neighbouring partitions of a small write into one task.
          slice.add(Expressions.literal(SQLConf.get().numShufflePartitions()));
        }
        slice.add(Expressions.literal(spec.compactMask()));
        for (String k : orEmpty(spec.bucketKeys())) {
          slice.add(Expressions.column(k));
        }
        // With partition columns, rows of a (partition, slice) meet in one task, whichever.
        String function = partitions.isEmpty() ? SliceFunction.NAME : BucketFunction.WRITE_NAME;
        out.add(Expressions.apply(function, slice.toArray(new Expression[0])));
        break;
      case "bucket":
      case "partition":
        for (String p : orEmpty(spec.partitionKeys())) {
          out.add(Expressions.column(p));
        }
        if ("bucket".equals(kind)) {
          // Unpartitioned: by the bucket's channel (SliceFunction: the bucket is the slice of
          // n), so bucket b reaches shuffle partition b mod M and the buckets spread evenly over
          // the tasks; Spark's hash of the bucket ids would leave some tasks idle.
          boolean unpartitioned = out.isEmpty();
          List<Expression> args = new ArrayList<>();
          args.add(Expressions.literal(spec.numBuckets()));
          if (unpartitioned) {
            args.add(Expressions.literal(SQLConf.get().numShufflePartitions()));
          }
          args.add(Expressions.literal(spec.compactMask()));
          for (String k : orEmpty(spec.bucketKeys())) {
            args.add(Expressions.column(k));
          }
          String bucketFunction = unpartitioned ? SliceFunction.NAME : BucketFunction.WRITE_NAME;
          out.add(Expressions.apply(bucketFunction, args.toArray(new Expression[0])));
        } else if (out.isEmpty()) {
          out.add(Expressions.literal(0)); // one writer for the whole table
        }
        break;
      default: // older metadata: the key columns (one writer per key, not per bucket)
        for (String c : table.writeClusterColumns()) {
          out.add(Expressions.column(c));
        }
    }
    return out.toArray(new Expression[0]);
  }

  /**
   * Asks Spark to shuffle rows by {@link #clustering()} before the Python writer. The
   * distribution is strictly required (the interface's default): Spark must not rebalance or
   * split a bucket's rows across tasks (AQE's skew handling of rebalances would).
   */
  private static final class ClusteredWrite implements RequiresDistributionAndOrdering {
    private final Write delegate;
    private final StructType schema; // the rows Python's writer takes
    private final int marker; // its never-null column (ArrowBatchBound's padding), -1: none
    private final int tasks; // the number of write tasks required; 0: Spark decides
    private final String tableName;
    private final Expression[] clustering;
    private final Runnable afterCommit; // null: nothing
    // Batch writes of qualifying append tables: Spark's Parquet writer (null: Python's writer).
    private final NativeAppendWrite.Settings nativeWrite;
    private final Runnable afterNativeCommit;
    private final Runnable beforeWrite;
    private final java.util.function.Consumer<WriterCommitMessage[]> rowLevelCommit; // null: none

    ClusteredWrite(
        Write delegate,
        StructType schema,
        int marker,
        int tasks,
        String tableName,
        Expression[] clustering,
        Runnable afterCommit,
        NativeAppendWrite.Settings nativeWrite,
        Runnable afterNativeCommit,
        Runnable beforeWrite,
        java.util.function.Consumer<WriterCommitMessage[]> rowLevelCommit) {
      this.beforeWrite = beforeWrite;
      this.rowLevelCommit = rowLevelCommit;
      this.delegate = delegate;
      this.schema = schema;
      this.marker = marker;
      this.tasks = tasks;
      this.tableName = tableName;
      this.clustering = clustering;
      this.afterCommit = afterCommit;
      this.nativeWrite = nativeWrite;
      this.afterNativeCommit = afterNativeCommit;
    }

    @Override
    public Distribution requiredDistribution() {
      return clustering.length == 0
          ? Distributions.unspecified()
          : Distributions.clustered(clustering);
    }

    @Override
    public int requiredNumPartitions() {
      return clustering.length == 0 ? 0 : tasks;
    }

    @Override
    public SortOrder[] requiredOrdering() {
      // A native writer keeps one file open: rows sorted by partition, as Spark's file writes
      // sort them (streaming micro-batches, written by Python, sort too; cheap at their size).
      return nativeWrite == null ? new SortOrder[0] : NativeAppendWrite.ordering(nativeWrite);
    }

    @Override
    public String description() {
      return "stratalake " + delegate.description();
    }

    @Override
    public BatchWrite toBatch() {
      // A write that evolves the schema commits it first (Paimon's PaimonV2Write.toBatch): the
      // tasks then write under the new schema. toBatch runs when the write executes, not when
      // it is planned (EXPLAIN does not change the table).
      beforeWrite.run();
      BatchWrite batch = delegate.toBatch();
      Runnable after = afterCommit;
      // Rows go to Python as Arrow batches, whose bytes the shim bounds without Spark's per-row
      // check where it can (ArrowBatchBound; null: Spark's check).
      ArrowBatchBound.Plan bound = ArrowBatchBound.plan(schema, SQLConf.get(), marker, tableName);
      if (nativeWrite != null) {
        batch = NativeAppendWrite.batch(batch, nativeWrite);
        // Python's writers compacted the small files they wrote; the native writer's commit is
        // followed by the table's small-file compaction when one is due (as Paimon's dedicated
        // compaction of unaware-bucket tables does).
        after = afterNativeCommit;
        bound = null; // Spark's Parquet writer: no Arrow
      }
      return new GuardedBatchWrite(batch, after, rowLevelCommit, bound);
    }

    @Override
    public StreamingWrite toStreaming() {
      // Streaming aborts keep Spark's messages as they are: a stopped query's epoch may have
      // been committed by Python when Spark aborts it, and its files must then stay.
      return new FollowedStreamingWrite(delegate.toStreaming(), afterCommit);
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
      return delegate.supportedCustomMetrics();
    }

    @Override
    public CustomTaskMetric[] reportDriverMetrics() {
      return delegate.reportDriverMetrics();
    }

    @Override
    public String toString() {
      return "StrataLakeWrite";
    }
  }

  /**
   * Runs what follows a successful commit. The data is committed by then: a failure (e.g. a
   * concurrent compaction took the same files) must not fail the write, whose abort would
   * delete committed files; the level-0 files wait for the next compaction instead.
   */
  private static void runAfterCommit(Runnable afterCommit) {
    if (afterCommit == null) {
      return;
    }
    try {
      afterCommit.run();
    } catch (RuntimeException e) {
      LOG.warn("stratalake: the compaction after a committed write failed; the table's level-0"
          + " files stay until its next compaction", e);
    }
  }

  /**
   * Spark's messages without the null ones of failed tasks, which deleted their own files:
   * Spark's Python write fails on a null message, and its abort then never deletes the files
   * of the tasks that did succeed.
   */
  static WriterCommitMessage[] nonNull(WriterCommitMessage[] messages) {
    return java.util.Arrays.stream(messages)
        .filter(java.util.Objects::nonNull)
        .toArray(WriterCommitMessage[]::new);
  }

  /**
   * Every batch write: its abort hands Python only real messages ({@link #nonNull}); a
   * successful commit is followed by {@code afterCommit} (null: nothing).
   *
   * <p>A commit has three outcomes: committed, not committed, unknown. Once Python's commit has
   * begun it owns the files (it deletes them only when it knows it did not commit), so an abort
   * Spark sends after a failed commit must not reach Python: it would delete files a published
   * snapshot may reference (as Iceberg's writers keep theirs on an unknown commit state).
   */
  private static final class GuardedBatchWrite implements BatchWrite {
    private final BatchWrite delegate;
    private final Runnable afterCommit;
    // Row-level statements by position: their commit runs through the bridge (null: Python's).
    private final java.util.function.Consumer<WriterCommitMessage[]> committer;
    private final ArrowBatchBound.Plan bound; // null: Spark's byte check
    private volatile boolean commitBegun;

    GuardedBatchWrite(
        BatchWrite delegate,
        Runnable afterCommit,
        java.util.function.Consumer<WriterCommitMessage[]> committer,
        ArrowBatchBound.Plan bound) {
      this.delegate = delegate;
      this.afterCommit = afterCommit;
      this.committer = committer;
      this.bound = bound;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      DataWriterFactory factory = delegate.createBatchWriterFactory(info);
      return bound == null ? factory : ArrowBatchBound.lifted(factory, bound);
    }

    @Override
    public boolean useCommitCoordinator() {
      return delegate.useCommitCoordinator();
    }

    @Override
    public void onDataWriterCommit(WriterCommitMessage message) {
      delegate.onDataWriterCommit(message);
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
      commitBegun = true;
      if (committer != null) {
        committer.accept(nonNull(messages));
      } else {
        delegate.commit(messages);
      }
      runAfterCommit(afterCommit);
    }

    @Override
    public void commit(WriterCommitMessage[] messages, WriteSummary summary) {
      commitBegun = true;
      if (committer != null) {
        committer.accept(nonNull(messages));
      } else {
        delegate.commit(messages, summary);
      }
      runAfterCommit(afterCommit);
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
      if (commitBegun) {
        LOG.warn("stratalake: the write's commit failed; its files are left to the commit, which"
            + " removed them if it knows it did not commit (otherwise remove_orphan_files does)");
        return;
      }
      delegate.abort(nonNull(messages));
    }
  }

  /**
   * A streaming write whose every successful epoch commit is followed by {@code afterCommit}
   * (null: nothing). An epoch whose commit began is not aborted through Python (see
   * {@link GuardedBatchWrite}); Python's abort also keeps an epoch it finds committed.
   */
  private static final class FollowedStreamingWrite implements StreamingWrite {
    private final StreamingWrite delegate;
    private final Runnable afterCommit;
    private final java.util.Set<Long> begunEpochs = java.util.concurrent.ConcurrentHashMap.newKeySet();

    FollowedStreamingWrite(StreamingWrite delegate, Runnable afterCommit) {
      this.delegate = delegate;
      this.afterCommit = afterCommit;
    }

    @Override
    public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
      return delegate.createStreamingWriterFactory(info);
    }

    @Override
    public boolean useCommitCoordinator() {
      return delegate.useCommitCoordinator();
    }

    @Override
    public void commit(long epochId, WriterCommitMessage[] messages) {
      begunEpochs.add(epochId);
      delegate.commit(epochId, messages);
      runAfterCommit(afterCommit);
    }

    @Override
    public void abort(long epochId, WriterCommitMessage[] messages) {
      if (begunEpochs.contains(epochId)) {
        LOG.warn("stratalake: epoch " + epochId + " failed after its commit began; its files are"
            + " left to the commit (remove_orphan_files reclaims any leftover)");
        return;
      }
      delegate.abort(epochId, messages);
    }
  }

  /** The write info Spark gave, with the options stratalake adds (shared with RowLevelRewrite). */
  public static final class WriteInfo implements LogicalWriteInfo {
    private final LogicalWriteInfo delegate;
    private final CaseInsensitiveStringMap options;

    public WriteInfo(LogicalWriteInfo delegate, CaseInsensitiveStringMap options) {
      this.delegate = delegate;
      this.options = options;
    }

    @Override
    public CaseInsensitiveStringMap options() {
      return options;
    }

    @Override
    public String queryId() {
      return delegate.queryId();
    }

    @Override
    public StructType schema() {
      return delegate.schema();
    }

    @Override
    public Optional<StructType> rowIdSchema() {
      return delegate.rowIdSchema();
    }

    @Override
    public Optional<StructType> metadataSchema() {
      return delegate.metadataSchema();
    }
  }
}
