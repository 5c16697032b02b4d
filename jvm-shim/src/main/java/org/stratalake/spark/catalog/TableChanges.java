package org.stratalake.spark.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.stratalake.spark.bridge.Json;
import org.stratalake.spark.bridge.Messages;

/** Spark's ALTER TABLE changes as bridge messages for the Python catalog (which validates them). */
public final class TableChanges {
  private TableChanges() {}

  static Messages.TableChange toMessage(TableChange change) {
    if (change instanceof TableChange.SetProperty c) {
      return message("set_property", null, c.property(), c.value(), null, null, null, null, null);
    } else if (change instanceof TableChange.RemoveProperty c) {
      return message("remove_property", null, c.property(), null, null, null, null, null, null);
    } else if (change instanceof TableChange.AddColumn c) {
      if (c.defaultValue() != null) {
        // As Paimon's Spark catalog: rows already written would not read the default.
        throw new UnsupportedOperationException(
            "stratalake: ALTER TABLE ADD COLUMN "
                + String.join(".", c.fieldNames())
                + " with a DEFAULT is not supported (rows already written would not take it);"
                + " add the column, then ALTER COLUMN ... SET DEFAULT");
      }
      return positioned(
          message(
              "add_column",
              c.fieldNames(),
              null,
              null,
              Json.readTree(c.dataType().json()),
              c.isNullable(),
              c.comment(),
              null,
              null),
          c.position());
    } else if (change instanceof TableChange.UpdateColumnPosition c) {
      return positioned(
          message("update_column_position", c.fieldNames(), null, null, null, null, null, null, null),
          c.position());
    } else if (change instanceof TableChange.RenameColumn c) {
      return message(
          "rename_column", c.fieldNames(), null, null, null, null, null, c.newName(), null);
    } else if (change instanceof TableChange.DeleteColumn c) {
      return message(
          "drop_column",
          c.fieldNames(),
          null,
          null,
          null,
          null,
          null,
          null,
          Boolean.TRUE.equals(c.ifExists()));
    } else if (change instanceof TableChange.UpdateColumnType c) {
      return message(
          "update_column_type",
          c.fieldNames(),
          null,
          null,
          Json.readTree(c.newDataType().json()),
          null,
          null,
          null,
          null);
    } else if (change instanceof TableChange.UpdateColumnComment c) {
      return message(
          "update_column_comment", c.fieldNames(), null, null, null, null, c.newComment(), null,
          null);
    } else if (change instanceof TableChange.UpdateColumnDefaultValue c) {
      // SET DEFAULT v: v's SQL text, as Paimon stores it; DROP DEFAULT: null.
      String sql = c.newCurrentDefault() == null ? null : c.newCurrentDefault().getSql();
      return message(
          "update_column_default_value", c.fieldNames(), null, sql, null, null, null, null, null);
    } else if (change instanceof TableChange.UpdateColumnNullability c) {
      return message(
          "update_column_nullability", c.fieldNames(), null, null, null, c.nullable(), null, null,
          null);
    }
    throw unsupported(change.getClass().getSimpleName());
  }

  /** {@code m} with Spark's FIRST / AFTER {@code <column>} (null: where Spark leaves it). */
  private static Messages.TableChange positioned(
      Messages.TableChange m, TableChange.ColumnPosition position) {
    Boolean first = null;
    String after = null;
    if (position instanceof TableChange.First) {
      first = Boolean.TRUE;
    } else if (position instanceof TableChange.After a) {
      after = a.column();
    } else if (position != null) {
      throw unsupported("column position " + position);
    }
    return new Messages.TableChange(
        m.kind(), m.fieldNames(), m.key(), m.value(), m.type(), m.nullable(), m.comment(),
        m.newName(), m.ifExists(), first, after);
  }

  private static Messages.TableChange message(
      String kind,
      String[] fieldNames,
      String key,
      String value,
      JsonNode type,
      Boolean nullable,
      String comment,
      String newName,
      Boolean ifExists) {
    return new Messages.TableChange(
        kind,
        fieldNames == null ? null : List.of(fieldNames),
        key,
        value,
        type,
        nullable,
        comment,
        newName,
        ifExists,
        null,
        null);
  }

  private static UnsupportedOperationException unsupported(String what) {
    return new UnsupportedOperationException(
        "stratalake: ALTER TABLE with " + what + " is not supported");
  }
}
