package org.stratalake.spark.sql;

import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParameterContext;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.parser.SqlStatementSplitResult;
import org.apache.spark.sql.catalyst.parser.TemporalIdentifier;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.stratalake.spark.bridge.BridgeWarmUp;
import scala.collection.immutable.Seq;

/**
 * Spark's parser plus two rewrites: Paimon's tag statements become the procedure calls or query
 * that do the same ({@link TagStatements}), and Flink/Paimon {@code WITH (...)} table options
 * become {@code TBLPROPERTIES (...)} (see {@link WithClauseRewriter}). Everything is delegated,
 * so all other syntax and error messages stay Spark's own.
 */
public class StrataLakeSqlParser implements ParserInterface {
  private final ParserInterface delegate;

  public StrataLakeSqlParser(ParserInterface delegate) {
    this.delegate = delegate;
  }

  @Override
  public LogicalPlan parsePlan(String sqlText) throws ParseException {
    BridgeWarmUp.userStatement(); // a session's warm-up stops for the user's first statement
    return delegate.parsePlan(rewrite(sqlText));
  }

  @Override
  public LogicalPlan parsePlanWithParameters(String sqlText, ParameterContext context)
      throws ParseException {
    BridgeWarmUp.userStatement();
    return delegate.parsePlanWithParameters(rewrite(sqlText), context);
  }

  private static String rewrite(String sqlText) {
    String tagStatement = TagStatements.rewrite(sqlText, StrataLakeSqlParser::currentCatalog);
    return tagStatement != null ? tagStatement : WithClauseRewriter.rewrite(sqlText);
  }

  private static String currentCatalog() {
    return org.apache.spark.sql.classic.SparkSession$.MODULE$
        .active()
        .sessionState()
        .catalogManager()
        .currentCatalog()
        .name();
  }

  @Override
  public Expression parseExpression(String sqlText) throws ParseException {
    return delegate.parseExpression(sqlText);
  }

  @Override
  public TableIdentifier parseTableIdentifier(String sqlText) throws ParseException {
    return delegate.parseTableIdentifier(sqlText);
  }

  @Override
  public FunctionIdentifier parseFunctionIdentifier(String sqlText) throws ParseException {
    return delegate.parseFunctionIdentifier(sqlText);
  }

  @Override
  public Seq<String> parseMultipartIdentifier(String sqlText) throws ParseException {
    return delegate.parseMultipartIdentifier(sqlText);
  }

  @Override
  public TemporalIdentifier parseTemporalTableIdentifier(String sqlText) throws ParseException {
    return delegate.parseTemporalTableIdentifier(sqlText);
  }

  @Override
  public LogicalPlan parseQuery(String sqlText) throws ParseException {
    return delegate.parseQuery(sqlText);
  }

  @Override
  public StructType parseRoutineParam(String sqlText) throws ParseException {
    return delegate.parseRoutineParam(sqlText);
  }

  @Override
  public SqlStatementSplitResult splitStatements(String sqlText) {
    return delegate.splitStatements(sqlText);
  }

  @Override
  public StructType parseTableSchema(String sqlText) throws ParseException {
    return delegate.parseTableSchema(sqlText);
  }

  @Override
  public DataType parseDataType(String sqlText) throws ParseException {
    return delegate.parseDataType(sqlText);
  }
}
