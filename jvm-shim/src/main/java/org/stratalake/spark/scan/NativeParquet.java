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
    return readerFactory(Settings.ofSession(), readSchema, filters);
  }

  /**
   * Spark's Parquet reader of {@code readSchema} with {@code settings}: a scan that reads files
   * under several schemas (with and without the row index column) takes the session's settings
   * once, since copying and digesting them (~1,100 Hadoop entries) is most of the cost.
   */
  static FilePartitionReaderFactory readerFactory(
      Settings settings, StructType readSchema, Filter[] filters) {
    StructType schema = CharVarcharUtils.replaceCharVarcharWithStringInSchema(readSchema);
    // Paimon writes proleptic Gregorian dates and timestamps and no Spark version in its files:
    // read them as written (Spark's default would refuse ancient values).
    java.util.Map<String, String> rebase = new java.util.HashMap<>();
    rebase.put("datetimeRebaseMode", "CORRECTED");
    rebase.put("int96RebaseMode", "CORRECTED");
    scala.collection.immutable.Map<String, String> options =
        scala.collection.immutable.Map$.MODULE$.from(
            scala.jdk.javaapi.CollectionConverters.asScala(rebase));
    Broadcast<SerializableConfiguration> broadcast = HadoopConfs.broadcast(settings, schema.json());
    return new ParquetPartitionReaderFactory(
        settings.conf,
        broadcast,
        schema,
        schema,
        new StructType(),
        filters,
        Option.empty(),
        new ParquetOptions(options, settings.conf));
  }

  /**
   * The session's Hadoop settings for native reads as Spark's {@code ParquetScan} sets them (the
   * read schema aside, which each reader factory adds), and their digest.
   */
  static final class Settings {
    final org.apache.spark.sql.classic.SparkSession session;
    final SQLConf conf;
    final Configuration hadoop;
    final String digest;

    private Settings(org.apache.spark.sql.classic.SparkSession session) {
      this.session = session;
      this.conf = session.sessionState().conf();
      this.hadoop = session.sessionState().newHadoopConf();
      hadoop.set("parquet.read.support.class", ParquetReadSupport.class.getName());
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
      this.digest = HadoopConfs.digest(hadoop);
      HadoopConfs.DIGESTED.incrementAndGet();
    }

    /** The active session's settings, read now. */
    static Settings ofSession() {
      return new Settings(org.apache.spark.sql.classic.SparkSession$.MODULE$.active());
    }
  }

  /**
   * The broadcast Hadoop settings of native reads, shared by the scans whose settings are equal.
   * Spark's own file scans broadcast them anew for every query; here that broadcast was most of
   * the driver's planning time of a short query (a point lookup: ~9 ms of ~45). A key is the
   * session, a digest of every setting (the Hadoop configuration as the session would broadcast
   * it) and the read schema, so a changed setting gets its own broadcast; an entry evicted from
   * the bounded cache is released to Spark's cleaner once no scan holds it.
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

    /** Settings read and digested so far in this JVM (one per scan), for tests. */
    public static long digested() {
      return DIGESTED.get();
    }

    private static final java.util.concurrent.atomic.AtomicLong DIGESTED =
        new java.util.concurrent.atomic.AtomicLong();

    /** The broadcast of {@code settings} with {@code schemaJson} as the requested schema. */
    static Broadcast<SerializableConfiguration> broadcast(Settings settings, String schemaJson) {
      String key =
          settings.session.sessionUUID() + '\u0000' + settings.digest + '\u0000' + schemaJson;
      synchronized (CACHE) {
        Broadcast<SerializableConfiguration> hit = CACHE.get(key);
        if (hit != null) {
          return hit;
        }
      }
      // A copy: in local mode tasks read the broadcast object itself, and the settings are
      // shared by the scan's other schemas.
      Configuration hadoop = new Configuration(settings.hadoop);
      hadoop.set(ParquetReadSupport$.MODULE$.SPARK_ROW_REQUESTED_SCHEMA(), schemaJson);
      hadoop.set(
          org.apache.spark.sql.execution.datasources.parquet.ParquetWriteSupport$.MODULE$
              .SPARK_ROW_SCHEMA(),
          schemaJson);
      Broadcast<SerializableConfiguration> built =
          SerializableConfiguration$.MODULE$.broadcast(settings.session.sparkContext(), hadoop);
      CREATED.incrementAndGet();
      synchronized (CACHE) {
        CACHE.put(key, built);
      }
      return built;
    }

    /**
     * A digest of every (key, value) of {@code conf}: their count and two order-independent
     * 64-bit sums of a 64-bit hash per entry (FNV-1a of key and value, mixed). Not cryptographic:
     * it tells apart settings a session changed, not values built to collide; the session is part
     * of every key. A SHA-256 of the sorted entries took ~2.3 ms against ~0.8 ms (timed from
     * Python, a few runs into a session).
     */
    static String digest(Configuration conf) {
      long sum = 0;
      long mixed = 0;
      int n = 0;
      for (java.util.Map.Entry<String, String> e : conf) {
        long h = fmix(fnv(e.getKey()) * 0x9E3779B97F4A7C15L + fnv(String.valueOf(e.getValue())));
        sum += h;
        mixed += fmix(h ^ 0xC2B2AE3D27D4EB4FL);
        n++;
      }
      return n + ":" + Long.toHexString(sum) + ":" + Long.toHexString(mixed);
    }

    private static long fnv(String s) {
      long h = 0xCBF29CE484222325L;
      for (int i = 0; i < s.length(); i++) {
        h = (h ^ s.charAt(i)) * 0x100000001B3L;
      }
      return h;
    }

    /** MurmurHash3's 64-bit finalizer: every input bit reaches every output bit. */
    private static long fmix(long h) {
      h ^= h >>> 33;
      h *= 0xFF51AFD7ED558CCDL;
      h ^= h >>> 33;
      h *= 0xC4CEB9FE1A85EC53L;
      h ^= h >>> 33;
      return h;
    }
  }
}
