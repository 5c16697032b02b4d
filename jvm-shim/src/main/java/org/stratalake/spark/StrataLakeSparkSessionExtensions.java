package org.stratalake.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.stratalake.spark.bridge.BridgeWarmUp;
import org.stratalake.spark.catalog.SessionTableNames;
import org.stratalake.spark.source.LakeSource;
import org.stratalake.spark.scan.DriverRowsStrategy;
import org.stratalake.spark.scan.TypedScans;
import org.stratalake.spark.sql.AnalyzeStatements;
import org.stratalake.spark.sql.IncrementalQueryFunctions;
import org.stratalake.spark.sql.MergeSchemaWrites;
import org.stratalake.spark.sql.RowLevelRewrite;
import org.stratalake.spark.sql.StrataLakeSqlParser;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

/**
 * Entry point for
 * {@code spark.sql.extensions=org.stratalake.spark.StrataLakeSparkSessionExtensions}: installs
 * the parser that accepts Flink/Paimon style {@code WITH (...)} table options, and the rewrite of
 * row-level DML into change records ({@link RowLevelRewrite}), and the scan node that names its
 * column-vector class to Spark's code generator ({@link TypedScans}), Paimon's incremental-query
 * table functions ({@link IncrementalQueryFunctions}), the name check of stratalake's session
 * catalog ({@link SessionTableNames}), write-time schema evolution ({@link
 * MergeSchemaWrites}), and the planning of answers the driver holds without a Spark job ({@link
 * DriverRowsStrategy}).
 */
public class StrataLakeSparkSessionExtensions
    extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectParser(new ParserBuilder());
    extensions.injectPreCBORule(new RuleBuilder());
    extensions.injectResolutionRule(new SessionNamesBuilder());
    extensions.injectResolutionRule(new AnalyzeBuilder());
    // Write-time schema evolution: the target before Spark's column check, then the merge.
    extensions.injectHintResolutionRule(
        new Builder(session -> new MergeSchemaWrites.Targets(session)));
    extensions.injectResolutionRule(new Builder(session -> new MergeSchemaWrites.Evolve(session)));
    extensions.injectColumnar(new ColumnarBuilder());
    extensions.injectColumnar(new DriverLookupBuilder());
    extensions.injectPlannerStrategy(new DriverRowsBuilder());
    IncrementalQueryFunctions.all().forEach(extensions::injectTableFunction);
    // Applied as a session is constructed: the moment to start the catalog's Python worker in
    // the background, rather than in the first query (BridgeWarmUp); then Spark's lookup of
    // Python data sources (once per JVM, another Python process, ~0.7 s), which the first write
    // or read merged in Python needs to find stratalake's.
    BridgeWarmUp.extensionsApplied(
        session -> session.sessionState().dataSourceManager().dataSourceExists(LakeSource.SOURCE_NAME));
    return BoxedUnit.UNIT;
  }

  private static final class RuleBuilder
      extends AbstractFunction1<SparkSession, Rule<LogicalPlan>> {
    @Override
    public Rule<LogicalPlan> apply(SparkSession session) {
      return new RowLevelRewrite();
    }
  }

  private static final class SessionNamesBuilder
      extends AbstractFunction1<SparkSession, Rule<LogicalPlan>> {
    @Override
    public Rule<LogicalPlan> apply(SparkSession session) {
      return new SessionTableNames(session);
    }
  }

  private static final class AnalyzeBuilder
      extends AbstractFunction1<SparkSession, Rule<LogicalPlan>> {
    @Override
    public Rule<LogicalPlan> apply(SparkSession session) {
      return new AnalyzeStatements(session);
    }
  }

  /** A rule built from the session by {@code factory}. */
  private static final class Builder extends AbstractFunction1<SparkSession, Rule<LogicalPlan>> {
    private final java.util.function.Function<SparkSession, Rule<LogicalPlan>> factory;

    Builder(java.util.function.Function<SparkSession, Rule<LogicalPlan>> factory) {
      this.factory = factory;
    }

    @Override
    public Rule<LogicalPlan> apply(SparkSession session) {
      return factory.apply(session);
    }
  }

  private static final class ColumnarBuilder
      extends AbstractFunction1<SparkSession, org.apache.spark.sql.execution.ColumnarRule> {
    @Override
    public org.apache.spark.sql.execution.ColumnarRule apply(SparkSession session) {
      return new TypedScans();
    }
  }

  private static final class DriverLookupBuilder
      extends AbstractFunction1<SparkSession, org.apache.spark.sql.execution.ColumnarRule> {
    @Override
    public org.apache.spark.sql.execution.ColumnarRule apply(SparkSession session) {
      return new org.stratalake.spark.scan.DriverLookupRule();
    }
  }

  private static final class DriverRowsBuilder
      extends AbstractFunction1<SparkSession, org.apache.spark.sql.execution.SparkStrategy> {
    @Override
    public org.apache.spark.sql.execution.SparkStrategy apply(SparkSession session) {
      return new DriverRowsStrategy();
    }
  }

  private static final class ParserBuilder
      extends AbstractFunction2<SparkSession, ParserInterface, ParserInterface> {
    @Override
    public ParserInterface apply(SparkSession session, ParserInterface delegate) {
      return new StrataLakeSqlParser(delegate);
    }
  }
}
