package org.stratalake.spark.scan;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.NullOrdering;
import org.apache.spark.sql.connector.expressions.SortDirection;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportOrdering;
import org.apache.spark.sql.connector.read.SupportsReportPartitioning;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.SupportsRuntimeV2Filtering;
import org.apache.spark.sql.connector.read.partitioning.KeyGroupedPartitioning;
import org.apache.spark.sql.connector.read.partitioning.Partitioning;
import org.apache.spark.sql.connector.read.partitioning.UnknownPartitioning;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.execution.datasources.v2.FilePartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.v2.python.PythonBatch;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource;
import org.apache.spark.sql.execution.datasources.v2.python.PythonInputPartition;
import org.apache.spark.sql.execution.datasources.v2.python.PythonScan;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.internal.connector.PredicateUtils;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.stratalake.spark.bridge.Json;
import org.stratalake.spark.bridge.Messages.PlanScan;
import org.stratalake.spark.bridge.Messages.ScanPlan;
import org.stratalake.spark.bridge.Messages.ScanSplit;
import org.stratalake.spark.bridge.Messages;
import org.stratalake.spark.bridge.Operation;
import org.stratalake.spark.bridge.PythonBridge;
import org.stratalake.spark.source.LakeSource;
import org.stratalake.spark.source.LakeTable;

/**
 * A stratalake scan: what Spark pushed down (columns, filters, a limit, runtime filters) goes to
 * the Python planner through the bridge, which answers with the splits and their facts; the
 * splits are then read by Spark's own Python data source machinery.
 *
 * <p>Why plan here rather than in the Python reader's {@code partitions()}: Spark asks for
 * statistics and partitioning during optimization, before any batch exists, and needs per-split
 * facts (bucket ids for storage-partitioned joins, sizes for metrics) that the opaque pickled
 * partitions of a plain Python scan cannot carry. One bridge call answers all of it; the
 * Python reader is told (option "stratalake.scan.planned") not to plan again.
 */
public final class StrataLakeScan
    implements Scan, SupportsReportStatistics, SupportsReportPartitioning,
        SupportsReportOrdering, SupportsRuntimeV2Filtering {
  private final LakeTable table;
  private final Map<String, String> sourceOptions;
  private final StructType readSchema;
  private final ArrayNode filters;
  private final String pushedDescription;
  private final Integer limit;
  private final boolean nativeRead;
  private final Predicate[] pushedPredicates;
  /** A partially pushed COUNT(*): every input partition returns one row, its count. */
  private final boolean countOnly;
  private final ArrayNode runtimeFilters = PythonBridge.JSON.createArrayNode();
  private ScanPlan plan;
  private StrataLakeBatch batch;
  /**
   * Set once Spark turned this scan into a micro-batch stream: its statistics and description
   * then need no batch plan, which would read the latest snapshot and refuse the stream-only read
   * options (consumer-id...) a batch read refuses.
   */
  private volatile boolean streaming;

  StrataLakeScan(
      LakeTable table,
      Map<String, String> sourceOptions,
      StructType readSchema,
      ArrayNode filters,
      String pushedDescription,
      Integer limit,
      boolean nativeRead,
      Predicate[] pushedPredicates,
      boolean countOnly) {
    this.pushedPredicates = pushedPredicates;
    this.countOnly = countOnly;
    this.nativeRead = nativeRead;
    this.table = table;
    this.sourceOptions = sourceOptions;
    this.readSchema = readSchema;
    this.filters = filters;
    this.pushedDescription = pushedDescription;
    this.limit = limit;
  }

  /**
   * How many tasks the cluster runs at once right now (Spark's own measure for barrier stages);
   * the default parallelism when that is unknown (no executor yet, or an API change).
   */
  static int taskSlots() {
    org.apache.spark.SparkContext sc =
        org.apache.spark.sql.classic.SparkSession$.MODULE$.active().sparkContext();
    try {
      int slots =
          sc.maxNumConcurrentTasks(sc.resourceProfileManager().defaultResourceProfile());
      if (slots > 0) {
        return slots;
      }
    } catch (RuntimeException | LinkageError e) {
      // (an internal API: fall back rather than fail the scan)
    }
    return sc.defaultParallelism();
  }

  /** The Python planner's answer for the current pushdowns (one bridge call, then cached). */
  private ScanPlan plan() {
    if (plan == null) {
      List<String> columns = List.of(readSchema.fieldNames());
      // Native splits are packed into input partitions as Spark packs Parquet files.
      int parallelism =
          org.apache.spark.sql.classic.SparkSession$.MODULE$.active().sparkContext().defaultParallelism();
      if (countOnly) {
        columns = null;
        // Splits that need a merge are packed into one COUNT(*) task per task slot: each task
        // returns one number, and every further task per slot only adds Spark's per-task cost
        // (measured: 20M rows in 32 splits, 2 slots: 0.33 s in 2 tasks, 0.38 s in 4).
        parallelism = taskSlots();
      }
      PlanScan req =
          new PlanScan(
              sourceOptions,
              columns,
              countOnly,
              parallelism,
              Json.elements(filters),
              Json.elements(runtimeFilters),
              limit,
              nativeRead,
              NativeParquet.mergeEnabled());
      plan = PythonBridge.call(Operation.PLAN_SCAN, req);
    }
    return plan;
  }

  /**
   * The one column-vector class every batch of this scan has, or null when its batches mix kinds
   * ({@link TypedBatchScanExec} reports it to Spark's code generator): when every split is read
   * natively, Spark's on- or off-heap vectors if no file has deleted or superseded rows (the
   * Parquet reader's batches go out as they are), else views of kept rows ({@link
   * SelectedColumnVector}: {@code NativeBatchReader} then hands out every batch as a view); Arrow
   * vectors when every split is merged in Python ({@link MergedBatchReader}).
   */
  String vectorClass() {
    if (countOnly || plan().splits().isEmpty()) {
      return null;
    }
    boolean allNative = true;
    boolean merged = true;
    boolean views = false;
    for (ScanSplit s : plan().splits()) {
      if (s.nativeFiles() == null) {
        allNative = false;
        continue;
      }
      merged = false;
      views |= hasSupersededRows(s) || hasDeletionVector(s);
    }
    if (allNative && views) {
      return SelectedColumnVector.class.getName();
    }
    if (allNative) {
      return (SQLConf.get().offHeapColumnVectorEnabled()
              ? org.apache.spark.sql.execution.vectorized.OffHeapColumnVector.class
              : org.apache.spark.sql.execution.vectorized.OnHeapColumnVector.class)
          .getName();
    }
    return merged ? org.apache.spark.sql.vectorized.ArrowColumnVector.class.getName() : null;
  }

  private static int orZero(Integer value) {
    return value == null ? 0 : value;
  }

  /** Whether a planned split is read natively minus rows a key merge in Python supersedes. */
  private static boolean hasSupersededRows(ScanSplit split) {
    return split.supersededPartition() != null;
  }

  /** Whether a native file of a planned split has a deletion vector. */
  private static boolean hasDeletionVector(ScanSplit split) {
    if (split.nativeFiles() == null) {
      return false;
    }
    for (Messages.NativeFile f : split.nativeFiles()) {
      if (f.deletion() != null) {
        return true;
      }
    }
    return false;
  }

  @Override
  public StructType readSchema() {
    return readSchema;
  }

  @Override
  public String description() {
    StringBuilder sb = new StringBuilder("stratalake ").append(table.name());
    if (!pushedDescription.isEmpty()) {
      sb.append(" [pruning filters: ").append(pushedDescription).append(']');
    }
    if (limit != null) {
      sb.append(" [limit: ").append(limit).append(']');
    }
    if (!runtimeFilters.isEmpty()) {
      sb.append(" [runtime filters: ").append(runtimeFilters.size()).append(']');
    }
    if (streaming) {
      return sb.append(" [stream]").toString();  // batches are planned by the stream reader
    }
    List<ScanSplit> splits = plan().splits();
    if (countOnly) {
      return sb.append(" [COUNT(*): ")
          .append(orZero(plan().countFromMetadata()))
          .append(" splits from metadata, ")
          .append(orZero(plan().countMerged()))
          .append(" merged in Python]")
          .toString();
    }
    int nativeSplits = 0;
    int merged = 0;
    int keyMerged = 0;
    for (ScanSplit s : splits) {
      // A native entry may be several splits the planner packed into one input partition.
      if (s.nativeFiles() != null) {
        nativeSplits += s.splits() == null ? 1 : s.splits();
        keyMerged += orZero(s.superseded());
      } else {
        merged++;
      }
    }
    sb.append(" [splits: ")
        .append(nativeSplits)
        .append(" native, ")
        .append(merged)
        .append(" merged in Python")
        .append(keyMerged > 0 ? ", " + keyMerged + " of the native after a key merge in Python" : "")
        .append(nativeRead ? "" : ", native read off")
        .append(']');
    return sb.toString();
  }

  @Override
  public Statistics estimateStatistics() {
    if (streaming) {
      return new Statistics() {
        @Override
        public OptionalLong sizeInBytes() {
          return OptionalLong.empty();
        }

        @Override
        public OptionalLong numRows() {
          return OptionalLong.empty();
        }
      };
    }
    ScanPlan p = plan();
    // Spark treats 0 bytes as "tiny"; an empty table is, but keep the estimate positive.
    return new ReportedStatistics(
        p.rows(), Math.max(1L, p.bytes()), p.columnStats(), readSchema());
  }

  /**
   * Rows of one bucket share {@code bucket(n, bucket key)}: reported as key-grouped
   * partitioning so Spark can join or aggregate two stratalake tables with the same bucket count
   * (or, with compatible transforms allowed, counts that divide each other: see {@link
   * BucketFunction}) on their bucket keys without a shuffle. Python says whether all splits agree
   * on the count and whether Spark can be told the layout at all (one bucket-key column whose
   * Spark type hashes like the Paimon type).
   */
  @Override
  public Partitioning outputPartitioning() {
    ScanPlan p = plan();
    Integer numBuckets = p.numBuckets();
    List<String> keys = p.bucketKeys();
    Set<Integer> buckets = new HashSet<>();
    p.splits().forEach(s -> buckets.add(s.bucket()));
    if (numBuckets == null || keys.isEmpty() || buckets.isEmpty()) {
      return new UnknownPartitioning(Math.max(1, p.splits().size()));
    }
    return new KeyGroupedPartitioning(
        new Expression[] {Expressions.bucket(numBuckets, keys.toArray(new String[0]))},
        buckets.size());
  }

  /**
   * Each split's rows come out sorted by the primary key when Python says so (merged splits and
   * one-file splits; not deletion-vector splits read file by file): a sort-merge join or sorted
   * aggregation on the key then skips its sort. Spark drops this ordering by itself where it
   * groups several splits into one partition (a bucket of a partitioned table in a
   * storage-partitioned join).
   */
  @Override
  public SortOrder[] outputOrdering() {
    List<String> keys = plan().ordering();
    SortOrder[] out = new SortOrder[keys.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] =
          Expressions.sort(
              Expressions.column(keys.get(i)), SortDirection.ASCENDING, NullOrdering.NULLS_FIRST);
    }
    return out;
  }

  /** Partition columns the scan outputs: Spark's dynamic partition pruning filters on them. */
  @Override
  public NamedReference[] filterAttributes() {
    Set<String> output = new HashSet<>(java.util.Arrays.asList(readSchema.fieldNames()));
    return table.partitionKeys().stream()
        .filter(output::contains)
        .map(Expressions::column)
        .toArray(NamedReference[]::new);
  }

  @Override
  public void filter(Predicate[] predicates) {
    boolean added = false;
    for (Predicate p : predicates) {
      ObjectNode json = ScanPredicates.toJson(p);
      if (json != null) {
        runtimeFilters.add(json);
        added = true;
      }
    }
    if (added) {
      plan = null; // re-plan with the pruned partitions; Spark calls toBatch() again
    }
  }

  @Override
  public CustomMetric[] supportedCustomMetrics() {
    // Declare Python's own metrics too, or the Python reader's values would be dropped. They are
    // Spark's fixed list: named without looking the data source up, which the first time in a JVM
    // runs Spark's search for Python data sources in a Python process of its own (~0.7 s of a
    // native read's first query, which needs no Python data source).
    CustomMetric[] ours = ScanMetrics.supported();
    CustomMetric[] py = new UserDefinedPythonDataSource(null).createPythonMetrics();
    CustomMetric[] out = new CustomMetric[ours.length + py.length];
    System.arraycopy(ours, 0, out, 0, ours.length);
    System.arraycopy(py, 0, out, ours.length, py.length);
    return out;
  }

  private static PythonDataSourceV2 pythonDataSource() {
    PythonDataSourceV2 ds = new PythonDataSourceV2();
    ds.setShortName(LakeSource.SOURCE_NAME);
    return ds;
  }

  /** Streaming reads stay entirely Spark's Python scan (the source's stream reader). */
  @Override
  public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
    streaming = true;
    PythonScan python =
        new PythonScan(
            pythonDataSource(),
            LakeSource.SOURCE_NAME,
            readSchema,
            new CaseInsensitiveStringMap(sourceOptions),
            new Filter[0]);
    return python.toMicroBatchStream(checkpointLocation);
  }

  @Override
  public Batch toBatch() {
    // One batch per plan: Spark asks again for each copy of its scan node, and a new batch would
    // build its reader factories (the session's Hadoop settings copied and digested) again.
    ScanPlan current = plan();
    StrataLakeBatch b = batch;
    if (b == null || b.batchPlan != current) {
      b = new StrataLakeBatch(current);
      batch = b;
    }
    return b;
  }

  /**
   * The pushed filters as Spark's V1 filters, for the Parquet reader's row-group pruning: only
   * those on columns the scan reads. Parquet's page-index filtering takes a column left out of
   * the projection for all-null, so a filter on it (such as an exact partition filter Spark
   * dropped, whose column it then does not read) would drop every row.
   */
  private Filter[] pushedV1Filters() {
    Set<String> read = new HashSet<>();
    for (org.apache.spark.sql.types.StructField field : readSchema.fields()) {
      // CHAR values may be stored unpadded while Spark compares padded literals: no pruning.
      if (org.apache.spark.sql.catalyst.util.CharVarcharUtils.getRawType(field.metadata())
          .isEmpty()) {
        read.add(field.name().toLowerCase(java.util.Locale.ROOT));
      }
    }
    java.util.List<Filter> out = new java.util.ArrayList<>();
    for (Filter f : PredicateUtils.toV1(pushedPredicates)) {
      boolean ok = true;
      for (String ref : f.references()) {
        ok &= read.contains(ref.toLowerCase(java.util.Locale.ROOT));
      }
      if (ok) {
        out.add(f);
      }
    }
    return out.toArray(new Filter[0]);
  }

  /** Options of the Python reader that reads the planned splits. */
  private Map<String, String> readerOptions() {
    Map<String, String> opts = new HashMap<>(sourceOptions);
    opts.put("stratalake.scan.planned", "true");
    opts.put("stratalake.scan.filters", filters.toString());
    if (limit != null) {
      opts.put("stratalake.scan.limit", Integer.toString(limit));
    }
    if (countOnly) {
      opts.put("stratalake.scan.count", "true");
    }
    return opts;
  }

  /**
   * The planned splits. Equality matters: Spark reuses a broadcast (and so keeps a dynamic
   * pruning filter) only when two scans of the same table compare equal.
   */
  private final class StrataLakeBatch implements Batch {
    private final ScanPlan batchPlan;
    private final String identity;
    private PartitionReaderFactory readerFactory;

    StrataLakeBatch(ScanPlan batchPlan) {
      this.batchPlan = batchPlan;
      this.identity =
          table.name()
              + '@'
              + batchPlan.snapshotId()
              + readSchema.json()
              + filters
              + runtimeFilters
              + limit;
    }

    @Override
    public InputPartition[] planInputPartitions() {
      List<ScanSplit> splits = batchPlan.splits();
      InputPartition[] out = new InputPartition[splits.size()];
      for (int i = 0; i < out.length; i++) {
        ScanSplit s = splits.get(i);
        PythonInputPartition py = new PythonInputPartition(i, s.partition());
        StrataLakeInputPartition.NativeFile[] nativeFiles = null;
        List<Messages.NativeFile> nf = s.nativeFiles();
        if (nf != null) {
          nativeFiles = new StrataLakeInputPartition.NativeFile[nf.size()];
          for (int j = 0; j < nativeFiles.length; j++) {
            Messages.NativeFile f = nf.get(j);
            Messages.DeletionFile dv = f.deletion();
            boolean hasDv = dv != null;
            nativeFiles[j] =
                new StrataLakeInputPartition.NativeFile(
                    f.path(),
                    f.size(),
                    f.rows(),
                    hasDv ? dv.path() : null,
                    hasDv ? dv.offset() : 0L,
                    hasDv ? dv.length() : 0);
          }
        }
        out[i] =
            new StrataLakeInputPartition(
                py,
                s.bucket(),
                s.files(),
                s.bytes(),
                s.rows(),
                s.runs(),
                s.splits() == null ? 1 : s.splits(),
                nativeFiles,
                s.supersededPartition() != null
                    ? new PythonInputPartition(i, s.supersededPartition())
                    : null,
                orZero(s.superseded()));
      }
      return out;
    }

    @Override
    public synchronized PartitionReaderFactory createReaderFactory() {
      if (readerFactory == null) {
        readerFactory = buildReaderFactory();
      }
      return readerFactory;
    }

    private PartitionReaderFactory buildReaderFactory() {
      int nativeSplits = 0;
      List<ScanSplit> splits = batchPlan.splits();
      for (ScanSplit s : splits) {
        nativeSplits += s.nativeFiles() != null ? 1 : 0;
      }
      boolean deletions = false;
      boolean superseded = false;
      for (ScanSplit s : splits) {
        superseded |= hasSupersededRows(s);
        deletions |= hasDeletionVector(s);
      }
      Filter[] pushed = pushedV1Filters();
      NativeParquet.Settings settings = nativeSplits > 0 ? NativeParquet.Settings.ofSession() : null;
      FilePartitionReaderFactory parquet =
          settings != null ? NativeParquet.readerFactory(settings, readSchema, pushed) : null;
      PartitionReaderFactory python =
          nativeSplits == splits.size() ? null : pythonReaderFactory(readSchema, readerOptions());
      PartitionReaderFactory positions = null;
      if (superseded) {
        Map<String, String> opts = readerOptions();
        opts.put("stratalake.scan.superseded", "true");
        positions = pythonReaderFactory(SupersededRows.SCHEMA, opts);
      }
      // Merged splits come back as Arrow batches whatever the read schema (Spark's own Python
      // reader wraps the same batches in Arrow vectors), so the Parquet reader's support decides.
      boolean columnar =
          splits.size() > 0
              && (parquet == null || parquet.supportColumnarReads(null))
              && (python == null || MergedBatchReader.enabled());
      // Files with deleted or superseded rows need each row's position in its file. Batches get
      // it from Spark's row index column, which stays right when the pushed filters skip row
      // groups and pages (a point lookup then reads a page, not the file); rows, and scans that
      // push no filter, read such files whole and count positions.
      FilePartitionReaderFactory indexed = null;
      FilePartitionReaderFactory unfiltered = null;
      if (parquet != null && (deletions || superseded)) {
        if (columnar && pushed.length > 0 && NativeParquet.canIndexRows(readSchema)) {
          indexed =
              NativeParquet.readerFactory(
                  settings, NativeParquet.withRowIndex(readSchema), pushed);
          if (!indexed.supportColumnarReads(null)) {
            indexed = null; // one column more than Spark's batch reads take
          }
        }
        if (indexed == null) {
          unfiltered = NativeParquet.readerFactory(settings, readSchema, new Filter[0]);
        }
      }
      return new StrataLakeReaderFactory(python, positions, parquet, unfiltered, indexed, columnar);
    }

    private PartitionReaderFactory pythonReaderFactory(
        StructType schema, Map<String, String> opts) {
      return ReaderFactoryCache.get(
              opts,
              schema,
              () -> {
                // A fresh Python source: PythonDataSourceV2 caches its planning per instance.
                PythonBatch python =
                    new PythonBatch(
                        pythonDataSource(),
                        LakeSource.SOURCE_NAME,
                        schema,
                        new CaseInsensitiveStringMap(opts));
                return python.createReaderFactory();
              });
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof StrataLakeBatch && ((StrataLakeBatch) o).identity.equals(identity);
    }

    @Override
    public int hashCode() {
      return Objects.hash(identity);
    }
  }
}
