package org.stratalake.spark.catalog;

import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.CatalogManager;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.datasources.CreateTable;
import org.stratalake.spark.bridge.Errors;

/**
 * One name, one table in stratalake's session catalog, for Spark's own providers too.
 *
 * <p>{@code CREATE TABLE ... USING parquet} (or Hive) in {@code spark_catalog} is planned as
 * Spark's V1 command, which asks only Spark's own catalog whether the name is taken, never the
 * session catalog extension. This analyzer rule asks {@link SparkSessionCatalog}: a name held
 * by a stratalake table is refused (TABLE_OR_VIEW_ALREADY_EXISTS), and {@code IF NOT EXISTS}
 * does nothing, as for any existing table.
 */
public final class SessionTableNames extends Rule<LogicalPlan> {
  private final org.apache.spark.sql.classic.SparkSession session;

  public SessionTableNames(org.apache.spark.sql.SparkSession session) {
    this.session = (org.apache.spark.sql.classic.SparkSession) session;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!(plan instanceof CreateTable)) {
      return plan;
    }
    CatalogManager manager = session.sessionState().catalogManager();
    CatalogPlugin sessionCatalog = manager.v2SessionCatalog();
    if (!(sessionCatalog instanceof SparkSessionCatalog)) {
      return plan;
    }
    CreateTable create = (CreateTable) plan;
    TableIdentifier id = create.tableDesc().identifier();
    String database =
        id.database().isDefined() ? id.database().get() : manager.currentNamespace()[0];
    Identifier ident = Identifier.of(new String[] {database}, id.table());
    if (!((SparkSessionCatalog) sessionCatalog).holdsLakeTable(ident)) {
      return plan;
    }
    if (create.mode() == SaveMode.Ignore) {
      return new LocalRelation(
          scala.jdk.javaapi.CollectionConverters.asScala(
                  java.util.List.<org.apache.spark.sql.catalyst.expressions.Attribute>of())
              .toSeq(),
          scala.jdk.javaapi.CollectionConverters.asScala(
                  java.util.List.<org.apache.spark.sql.catalyst.InternalRow>of())
              .toSeq(),
          false,
          scala.Option.empty());
    }
    throw Errors.sneaky(new TableAlreadyExistsException(ident));
  }
}
