package org.stratalake.spark.scan;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.catalyst.util.CharVarcharUtils;
import org.apache.spark.sql.execution.datasources.parquet.ParquetOptions;
import org.apache.spark.sql.execution.datasources.parquet.ParquetReadSupport$;
import org.apache.spark.sql.execution.datasources.parquet.ParquetReadSupport;
import org.apache.spark.sql.execution.datasources.v2.FilePartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetPartitionReaderFactory;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration$;
import org.apache.spark.util.SerializableConfiguration;
import org.stratalake.spark.bridge.PythonBridge;
import scala.Option;

/**
 * Spark's own Parquet reader for splits that need no merge (see {@link StrataLakeReaderFactory}).
 * Built on the driver as Spark's {@code ParquetScan} builds it: same Hadoop settings, the scan's
 * read schema as the requested schema (columns are matched by name; the planner only sends files
 * written with the table's current schema), and the pushed filters for row-group pruning only.
 */
public final class NativeParquet {
  /** SQL setting: read splits that need no merge with Spark's Parquet reader (default true). */
  static final String ENABLED = "stratalake.read.native.enabled";

  /**
   * SQL setting: with native reads on, also read splits of tables whose merge only picks rows
   * (deduplicate) natively, minus the rows the Python merge of their key columns drops (default
   * true).
   */
  static final String MERGE_ENABLED = "stratalake.read.native-merge.enabled";

  /** The same as a catalog option: {@code spark.sql.catalog.<name>.native-read}. */
  static final String CATALOG_OPTION = "native-read";

  private NativeParquet() {}

  /**
   * Whether native reads are on: the session's SQL setting when set, else the catalog's option
   * (a {@code spark.} key, so it can also be given to spark-submit), else true.
   */
  static boolean enabled(java.util.Map<String, String> sourceOptions) {
    String value = SQLConf.get().getConfString(ENABLED, null);
    if (value == null) {
      String catalog = sourceOptions.get("stratalake.catalog-options");
      if (catalog != null) {
        try {
          com.fasterxml.jackson.databind.JsonNode opts = PythonBridge.JSON.readTree(catalog);
          com.fasterxml.jackson.databind.JsonNode v = opts.get(CATALOG_OPTION);
          value = v == null || v.isNull() ? null : v.asText();
        } catch (java.io.IOException e) {
          value = null;
        }
      }
    }
    return value == null || Boolean.parseBoolean(value.trim());
  }

  /** Whether the session's SQL setting {@value #MERGE_ENABLED} leaves key-merged native reads on. */
  static boolean mergeEnabled() {
    String value = SQLConf.get().getConfString(MERGE_ENABLED, null);
    return value == null || Boolean.parseBoolean(value.trim());
  }

  /** A whole local Parquet file of {@code size} bytes, as Spark's reader takes one. */
  static org.apache.spark.sql.execution.datasources.PartitionedFile wholeFile(String path, long size) {
    return new org.apache.spark.sql.execution.datasources.PartitionedFile(
        org.apache.spark.sql.catalyst.InternalRow.empty(),
        org.apache.spark.paths.SparkPath.fromPathString(path),
        0L,
        size,
        new String[0],
        0L,
        size,
        scala.collection.immutable.Map$.MODULE$.<String, Object>empty());
  }

  /** Spark's name for the row index column its Parquet reader fills (not read from the file). */
  static String rowIndexColumn() {
    try {
      return org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat$.MODULE$
          .ROW_INDEX_TEMPORARY_COLUMN_NAME();
    } catch (LinkageError e) {
      return "_tmp_metadata_row_index"; // a Spark that moved the constant keeps its value
    }
  }

  /** Whether {@code readSchema} leaves Spark's row index column name free. */
  static boolean canIndexRows(StructType readSchema) {
    for (org.apache.spark.sql.types.StructField f : readSchema.fields()) {
      if (f.name().equalsIgnoreCase(rowIndexColumn())) {
        return false;
      }
    }
    return true;
  }

  /**
   * {@code readSchema} plus, last, the row index column: Spark's Parquet reader fills it with
   * each row's position in its file, counting the rows of skipped row groups and pages.
   */
  static StructType withRowIndex(StructType readSchema) {
    return readSchema.add(rowIndexColumn(), org.apache.spark.sql.types.DataTypes.LongType, true);
  }

  static FilePartitionReaderFactory readerFactory(StructType readSchema, Filter[] filters) {
    org.apache.spark.sql.classic.SparkSession session =
        org.apache.spark.sql.classic.SparkSession$.MODULE$.active();
    SQLConf conf = session.sessionState().conf();
    StructType schema = CharVarcharUtils.replaceCharVarcharWithStringInSchema(readSchema);
    Configuration hadoop = session.sessionState().newHadoopConf();
    String json = schema.json();
    hadoop.set("parquet.read.support.class", ParquetReadSupport.class.getName());
    hadoop.set(ParquetReadSupport$.MODULE$.SPARK_ROW_REQUESTED_SCHEMA(), json);
    hadoop.set(
        org.apache.spark.sql.execution.datasources.parquet.ParquetWriteSupport$.MODULE$
            .SPARK_ROW_SCHEMA(),
        json);
    hadoop.set(SQLConf.SESSION_LOCAL_TIMEZONE().key(), conf.sessionLocalTimeZone());
    hadoop.setBoolean(
        SQLConf.NESTED_SCHEMA_PRUNING_ENABLED().key(), conf.nestedSchemaPruningEnabled());
    hadoop.setBoolean(SQLConf.CASE_SENSITIVE().key(), conf.caseSensitiveAnalysis());
    hadoop.setBoolean(SQLConf.PARQUET_BINARY_AS_STRING().key(), conf.isParquetBinaryAsString());
    hadoop.setBoolean(
        SQLConf.PARQUET_INT96_AS_TIMESTAMP().key(), conf.isParquetINT96AsTimestamp());
    hadoop.setBoolean(
        SQLConf.PARQUET_INFER_TIMESTAMP_NTZ_ENABLED().key(),
        conf.parquetInferTimestampNTZEnabled());
    hadoop.setBoolean(
        SQLConf.LEGACY_PARQUET_NANOS_AS_LONG().key(), conf.legacyParquetNanosAsLong());
    try {
      hadoop.setBoolean(
          SQLConf.TIMESTAMP_NANOS_TYPES_ENABLED().key(), conf.timestampNanosTypesEnabled());
    } catch (NoSuchMethodError e) {
      // Spark 4.2 has no nanosecond timestamp types (4.3 added the setting): nothing to pass on.
    }
    hadoop.setBoolean(
        SQLConf.PARQUET_READER_RESPECT_UNKNOWN_TYPE_ANNOTATION().key(),
        conf.parquetReaderRespectUnknownTypeAnnotation());
    // Paimon writes proleptic Gregorian dates and timestamps and no Spark version in its files:
    // read them as written (Spark's default would refuse ancient values).
    java.util.Map<String, String> rebase = new java.util.HashMap<>();
    rebase.put("datetimeRebaseMode", "CORRECTED");
    rebase.put("int96RebaseMode", "CORRECTED");
    scala.collection.immutable.Map<String, String> options =
        scala.collection.immutable.Map$.MODULE$.from(
            scala.jdk.javaapi.CollectionConverters.asScala(rebase));
    Broadcast<SerializableConfiguration> broadcast = HadoopConfs.broadcast(session, hadoop);
    return new ParquetPartitionReaderFactory(
        conf,
        broadcast,
        schema,
        schema,
        new StructType(),
        filters,
        Option.empty(),
        new ParquetOptions(options, conf));
  }

  /**
   * The broadcast Hadoop settings of native reads, shared by the scans whose settings are equal.
   * Spark's own file scans broadcast them anew for every query; here that broadcast was most of
   * the driver's planning time of a short query (a point lookup: ~9 ms of ~45). A key is the
   * session and a digest of every setting (the Hadoop configuration as the session would
   * broadcast it), so a changed setting gets its own broadcast; an entry evicted from the bounded
   * cache is released to Spark's cleaner once no scan holds it.
   */
  public static final class HadoopConfs {
    private static final int MAX_ENTRIES = 16;
    private static final java.util.concurrent.atomic.AtomicLong CREATED =
        new java.util.concurrent.atomic.AtomicLong();
    private static final java.util.Map<String, Broadcast<SerializableConfiguration>> CACHE =
        new java.util.LinkedHashMap<>(16, 0.75f, true) {
          @Override
          protected boolean removeEldestEntry(
              java.util.Map.Entry<String, Broadcast<SerializableConfiguration>> eldest) {
            return size() > MAX_ENTRIES;
          }
        };

    private HadoopConfs() {}

    /** Broadcasts made so far in this JVM (the others were shared), for tests and diagnostics. */
    public static long created() {
      return CREATED.get();
    }

    static Broadcast<SerializableConfiguration> broadcast(
        org.apache.spark.sql.classic.SparkSession session, Configuration hadoop) {
      String key = session.sessionUUID() + '\u0000' + digest(hadoop);
      synchronized (CACHE) {
        Broadcast<SerializableConfiguration> hit = CACHE.get(key);
        if (hit != null) {
          return hit;
        }
      }
      Broadcast<SerializableConfiguration> built =
          SerializableConfiguration$.MODULE$.broadcast(session.sparkContext(), hadoop);
      CREATED.incrementAndGet();
      synchronized (CACHE) {
        CACHE.put(key, built);
      }
      return built;
    }

    /** SHA-256 of every (key, value) of {@code conf}, in key order. */
    static String digest(Configuration conf) {
      java.util.TreeMap<String, String> sorted = new java.util.TreeMap<>();
      for (java.util.Map.Entry<String, String> e : conf) {
        sorted.put(e.getKey(), e.getValue());
      }
      try {
        java.security.MessageDigest sha = java.security.MessageDigest.getInstance("SHA-256");
        for (java.util.Map.Entry<String, String> e : sorted.entrySet()) {
          sha.update(e.getKey().getBytes(java.nio.charset.StandardCharsets.UTF_8));
          sha.update((byte) 0);
          sha.update(String.valueOf(e.getValue()).getBytes(java.nio.charset.StandardCharsets.UTF_8));
          sha.update((byte) 1);
        }
        return java.util.HexFormat.of().formatHex(sha.digest());
      } catch (java.security.NoSuchAlgorithmException e) {
        throw new IllegalStateException("SHA-256 is missing from this JVM", e);
      }
    }
  }
}
