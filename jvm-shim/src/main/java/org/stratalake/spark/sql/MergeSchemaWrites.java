package org.stratalake.spark.sql;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.analysis.NamedRelation;
import org.apache.spark.sql.catalyst.analysis.TableOutputResolver;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.catalyst.plans.logical.InsertIntoStatement;
import org.apache.spark.sql.catalyst.plans.logical.InsertStarAction;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.MergeAction;
import org.apache.spark.sql.catalyst.plans.logical.MergeIntoTable;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.catalyst.plans.logical.UpdateStarAction;
import org.apache.spark.sql.catalyst.plans.logical.V2WriteCommand;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.connector.catalog.CatalogManager;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.stratalake.spark.source.LakeTable;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Write-time schema evolution, Paimon's {@code write.merge-schema}: a by-name batch write (
 * {@code df.writeTo(t).option("write.merge-schema", "true").append()}, {@code saveAsTable} in
 * append mode, {@code INSERT INTO t BY NAME} under {@code SET spark.stratalake.write.merge-schema
 * = true}) whose DataFrame has columns the table lacks adds them, and fills the table's columns
 * the DataFrame lacks with NULL, as Paimon's {@code PaimonAnalysis} resolves such writes.
 *
 * <p>Spark checks a write's columns against the table ({@code ResolveOutputRelation}) unless the
 * table declares ACCEPT_ANY_SCHEMA, which Paimon's tables always do. Here only the target of a
 * write that asks for the merge does: {@link Targets} (a hint-resolution rule, so it runs before
 * Spark's check) swaps it for {@link LakeTable#acceptingAnySchema()}; {@link Evolve} (a resolution
 * rule) asks Python for the merged schema (which refuses what cannot merge, naming the table,
 * column and types), rewrites the target to it and aligns the query by name: the table's columns
 * in its order, NULL for the missing ones, cast by Spark's own resolver as any write is. The schema
 * is committed when the write starts ({@code StrataLakeWriteBuilder}), not here, so EXPLAIN or a
 * plan that never runs changes nothing. Other writes keep Spark's checks unchanged.
 *
 * <p>A MERGE's {@code *} clauses under the session setting are refused when the source has columns
 * the table lacks (Targets.checkMerge): Paimon evolves the schema there too, stratalake does not.
 *
 * <p>The switches, as write options or session settings {@code spark.stratalake.<key>} (either
 * turns one on, as in Paimon): {@code write.merge-schema} (also Spark's {@code mergeSchema}),
 * {@code write.merge-schema.type-widening}, {@code write.merge-schema.explicit-cast} (refused by
 * Python).
 */
public final class MergeSchemaWrites {
  static final String MERGE_SCHEMA = "write.merge-schema";
  static final String SPARK_MERGE_SCHEMA = "mergeSchema";
  static final String TYPE_WIDENING = "write.merge-schema.type-widening";
  static final String EXPLICIT_CAST = "write.merge-schema.explicit-cast";
  static final String SESSION_PREFIX = "spark.stratalake.";

  private MergeSchemaWrites() {}

  /** Whether {@code key} is on, as a write option or as the session's setting. */
  static boolean on(scala.collection.immutable.Map<String, String> options, String key) {
    for (var e : CollectionConverters.asJava(options).entrySet()) {
      if (e.getKey().equalsIgnoreCase(key) && "true".equalsIgnoreCase(e.getValue().trim())) {
        return true;
      }
    }
    return "true".equalsIgnoreCase(SQLConf.get().getConfString(SESSION_PREFIX + key, "").trim());
  }

  static boolean requested(scala.collection.immutable.Map<String, String> options) {
    return on(options, MERGE_SCHEMA) || on(options, SPARK_MERGE_SCHEMA);
  }

  /** A by-name batch write's options; null for other plans. */
  private static scala.collection.immutable.Map<String, String> byNameWriteOptions(
      LogicalPlan plan) {
    if (plan instanceof AppendData a && a.isByName()) {
      return a.writeOptions();
    }
    if (plan instanceof OverwritePartitionsDynamic o && o.isByName()) {
      return o.writeOptions();
    }
    if (plan instanceof OverwriteByExpression o && o.isByName()) {
      return o.writeOptions();
    }
    return null;
  }

  /** Before Spark resolves the write: its stratalake target takes any columns. */
  public static final class Targets extends Rule<LogicalPlan> {
    private final org.apache.spark.sql.classic.SparkSession session;

    public Targets(org.apache.spark.sql.SparkSession session) {
      this.session = (org.apache.spark.sql.classic.SparkSession) session;
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
      if (plan instanceof MergeIntoTable m
          && hasStar(m)
          && requested(scala.collection.immutable.Map$.MODULE$.empty())) {
        checkMerge(m);
        return plan;
      }
      scala.collection.immutable.Map<String, String> options = byNameWriteOptions(plan);
      if (options != null && requested(options)) {
        V2WriteCommand write = (V2WriteCommand) plan;
        NamedRelation target = target((LogicalPlan) write.table());
        return target == null ? plan : (LogicalPlan) write.withNewTable(target);
      }
      if (plan instanceof InsertIntoStatement i
          && i.byName()
          && i.partitionSpec().isEmpty()
          && i.userSpecifiedCols().isEmpty()
          && requested(scala.collection.immutable.Map$.MODULE$.empty())) {
        NamedRelation target = target(i.table());
        return target == null
            ? plan
            : i.copy(
                (LogicalPlan) target,
                i.partitionSpec(),
                i.userSpecifiedCols(),
                i.query(),
                i.overwrite(),
                i.ifPartitionNotExists(),
                i.byName(),
                i.replaceCriteriaOpt(),
                i.withSchemaEvolution());
      }
      return plan;
    }

    /**
     * A MERGE's {@code UPDATE SET *} / {@code INSERT *} under the session's merge-schema setting,
     * whose source has columns the stratalake target lacks: Paimon would add them, stratalake's
     * MERGE does not evolve the schema, so it is refused rather than dropping the columns. (Spark
     * expands the stars while resolving the MERGE, so the source is analyzed here on its own.)
     */
    private void checkMerge(MergeIntoTable m) {
      LogicalPlan table = m.targetTable();
      while (table instanceof SubqueryAlias alias) {
        table = alias.child();
      }
      NamedRelation target = target(table);
      StructType source;
      try {
        source = org.apache.spark.sql.classic.Dataset.ofRows(session, m.sourceTable()).schema();
      } catch (RuntimeException e) {
        return; // Spark's own analysis of the MERGE reports it
      }
      if (target == null) {
        return;
      }
      SQLConf conf = SQLConf.get();
      List<String> extra = new ArrayList<>();
      for (StructField f : source.fields()) {
        boolean known = false;
        for (StructField t : ((DataSourceV2Relation) target).schema().fields()) {
          known |= (Boolean) conf.resolver().apply(f.name(), t.name());
        }
        if (!known) {
          extra.add(f.name());
        }
      }
      if (!extra.isEmpty()) {
        throw new UnsupportedOperationException(
            "table "
                + target.name()
                + ": MERGE INTO does not evolve the schema (spark.stratalake.write.merge-schema is"
                + " set), and its UPDATE SET * / INSERT * source has columns the table lacks: "
                + String.join(", ", extra)
                + "; add them first (ALTER TABLE ... ADD COLUMNS), or name the columns to write");
      }
    }

    /** The write's target as a relation that takes any columns; null when not a lake table. */
    private NamedRelation target(LogicalPlan table) {
      if (table instanceof DataSourceV2Relation r) {
        if (!(r.table() instanceof LakeTable lake) || accepts(lake)) {
          return null;
        }
        return r.copy(
            lake.acceptingAnySchema(),
            r.output(),
            r.catalog(),
            r.identifier(),
            r.options(),
            r.timeTravelSpec());
      }
      if (!(table instanceof UnresolvedRelation u)
          || session.sessionState().catalog().isTempView(u.multipartIdentifier())) {
        return null;
      }
      List<String> parts = CollectionConverters.asJava(u.multipartIdentifier());
      CatalogManager manager = session.sessionState().catalogManager();
      CatalogPlugin catalog;
      String[] namespace;
      int last = parts.size() - 1;
      if (parts.size() > 1 && manager.isCatalogRegistered(parts.get(0))) {
        catalog = manager.catalog(parts.get(0));
        namespace = parts.subList(1, last).toArray(new String[0]);
      } else {
        catalog = manager.currentCatalog();
        namespace =
            parts.size() == 1 ? manager.currentNamespace() : parts.subList(0, last).toArray(new String[0]);
      }
      if (!(catalog instanceof TableCatalog tables) || namespace.length == 0) {
        return null;
      }
      Identifier ident = Identifier.of(namespace, parts.get(last));
      Table loaded;
      try {
        loaded = tables.loadTable(ident);
      } catch (Exception e) {
        return null; // Spark's own resolution reports it
      }
      if (!(loaded instanceof LakeTable lake) || accepts(lake)) {
        return null;
      }
      // No relation options: the write's options travel with the command (Spark's V2Writes
      // takes one or the other).
      return DataSourceV2Relation.create(
          lake.acceptingAnySchema(),
          Option.apply(catalog),
          Option.apply(ident),
          org.apache.spark.sql.util.CaseInsensitiveStringMap.empty(),
          Option.empty());
    }

    private static boolean accepts(LakeTable lake) {
      return lake.capabilities().contains(TableCapability.ACCEPT_ANY_SCHEMA)
          || !lake.capabilities().contains(TableCapability.BATCH_WRITE);
    }
  }

  private static boolean hasStar(MergeIntoTable m) {
    List<MergeAction> actions = new ArrayList<>(CollectionConverters.asJava(m.matchedActions()));
    actions.addAll(CollectionConverters.asJava(m.notMatchedActions()));
    for (MergeAction a : actions) {
      if (a instanceof InsertStarAction || a instanceof UpdateStarAction) {
        return true;
      }
    }
    return false;
  }

  /** Once the query is resolved: the merged schema, and the query aligned to it by name. */
  public static final class Evolve extends Rule<LogicalPlan> {
    public Evolve(org.apache.spark.sql.SparkSession session) {}

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
      scala.collection.immutable.Map<String, String> options = byNameWriteOptions(plan);
      if (options == null) {
        return plan;
      }
      V2WriteCommand write = (V2WriteCommand) plan;
      if (!write.query().resolved()
          || !((Object) write.table() instanceof DataSourceV2Relation r)
          || !(r.table() instanceof LakeTable lake)
          || !lake.awaitsSchemaMerge()) {
        return plan;
      }
      SQLConf conf = SQLConf.get();
      LakeTable planned =
          lake.withSchemaMerge(
              write.query().schema(),
              on(options, TYPE_WIDENING),
              on(options, EXPLICIT_CAST),
              conf.caseSensitiveAnalysis());
      StructType merged = planned.schema();
      // The relation's own attributes for the columns it had (an overwrite's condition refers to
      // them), new ones for the added columns.
      List<AttributeReference> output = new ArrayList<>();
      List<AttributeReference> fresh = CollectionConverters.asJava(DataTypeUtils.toAttributes(merged));
      for (int i = 0; i < merged.fields().length; i++) {
        StructField f = merged.fields()[i];
        AttributeReference old = null;
        for (AttributeReference a : CollectionConverters.asJava(r.output())) {
          if (a.name().equals(f.name())) {
            old = a;
          }
        }
        output.add(
            old == null ? fresh.get(i) : old.withDataType(f.dataType()).withNullability(f.nullable()));
      }
      DataSourceV2Relation relation =
          r.copy(
              planned,
              CollectionConverters.asScala(output).toSeq(),
              r.catalog(),
              r.identifier(),
              r.options(),
              r.timeTravelSpec());
      List<NamedExpression> aligned = new ArrayList<>();
      List<Attribute> columns = CollectionConverters.asJava(write.query().output());
      for (AttributeReference column : output) {
        Expression value = null;
        for (Attribute a : columns) {
          if ((Boolean) conf.resolver().apply(a.name(), column.name())) {
            value = a;
          }
        }
        if (value == null) {
          value = Literal.create(null, column.dataType()); // Paimon fills missing columns with NULL
        }
        aligned.add(
            new Alias(
                value,
                column.name(),
                NamedExpression.newExprId(),
                scala.collection.immutable.Seq$.MODULE$.<String>empty(),
                Option.empty(),
                scala.collection.immutable.Seq$.MODULE$.<String>empty()));
      }
      LogicalPlan query = new Project(CollectionConverters.asScala(aligned).toSeq(), write.query());
      LogicalPlan resolved =
          TableOutputResolver.resolveOutputColumns(
              r.name(),
              CollectionConverters.asScala(new ArrayList<Attribute>(output)).toSeq(),
              query,
              true,
              conf,
              TableOutputResolver.resolveOutputColumns$default$6());
      // (Scala's V2WriteCommand is a LogicalPlan; Java sees the trait alone.)
      return (LogicalPlan) ((V2WriteCommand) write.withNewTable(relation)).withNewQuery(resolved);
    }
  }
}
