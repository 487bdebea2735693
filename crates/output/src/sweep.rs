//! A sweep's documents: the results table as CSV (`results.csv`) and Parquet
//! (`results.parquet`), and a point's entry (`point`) in its JSON document. The table itself
//! (its columns and cells) is plain data made by `storsim-sweep`; only the writing is here.

use std::io::Write;
use storsim_sweep::{Cell, Point, Table};

/// The point's entry in its JSON document (`point`): id, label and the parameters it sets.
pub fn sweep_point_json(point: &Point) -> serde_json::Value {
    let parameters: serde_json::Map<String, serde_json::Value> = point
        .parameters
        .iter()
        .filter(|(_, cell)| *cell != Cell::Empty)
        .map(|(column, cell)| (column.clone(), cell.json()))
        .collect();
    serde_json::json!({
        "id": point.id,
        "label": point.label,
        "parameters": parameters,
    })
}

/// Writes the table as CSV into `out`: a header row, then one row per point, each cell as
/// [`Cell::text`] gives it.
pub fn write_sweep_csv(table: &Table, out: impl Write) -> Result<(), csv::Error> {
    let mut writer = csv::Writer::from_writer(out);
    writer.write_record(&table.columns)?;
    for row in &table.rows {
        writer.write_record(row.iter().map(Cell::text))?;
    }
    writer.flush()?;
    Ok(())
}

/// What a column of the Parquet file holds: numbers when every value it has is one, flags
/// when every value is one, text otherwise (numbers and flags written as the CSV writes them).
#[derive(Clone, Copy, PartialEq, Eq)]
enum ColumnType {
    Number,
    Flag,
    Text,
}

fn column_type(table: &Table, column: usize) -> ColumnType {
    let mut cells = table
        .rows
        .iter()
        .map(|r| &r[column])
        .filter(|c| **c != Cell::Empty);
    if cells.clone().all(|c| matches!(c, Cell::Number(_))) {
        ColumnType::Number
    } else if cells.all(|c| matches!(c, Cell::Bool(_))) {
        ColumnType::Flag
    } else {
        ColumnType::Text
    }
}

/// The Parquet schema of `table`: one optional column per column, typed by [`column_type`].
fn parquet_schema(
    table: &Table,
) -> Result<std::sync::Arc<parquet::schema::types::Type>, parquet::errors::ParquetError> {
    use parquet::basic::{LogicalType, Repetition, Type as Physical};
    use parquet::schema::types::Type;
    use std::sync::Arc;

    let fields = table
        .columns
        .iter()
        .enumerate()
        .map(|(index, name)| {
            let builder = match column_type(table, index) {
                ColumnType::Number => Type::primitive_type_builder(name, Physical::DOUBLE),
                ColumnType::Flag => Type::primitive_type_builder(name, Physical::BOOLEAN),
                ColumnType::Text => Type::primitive_type_builder(name, Physical::BYTE_ARRAY)
                    .with_logical_type(Some(LogicalType::String)),
            };
            builder
                .with_repetition(Repetition::OPTIONAL)
                .build()
                .map(Arc::new)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Arc::new(
        Type::group_type_builder("results")
            .with_fields(fields)
            .build()?,
    ))
}

/// The table as a Parquet file: one optional column per column (doubles, booleans or
/// UTF-8 strings), empty cells as nulls, one row group.
pub fn sweep_parquet(table: &Table) -> Result<Vec<u8>, parquet::errors::ParquetError> {
    use parquet::column::writer::ColumnWriter;
    use parquet::data_type::ByteArray;
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use std::sync::Arc;

    let mut out = Vec::new();
    let mut writer = SerializedFileWriter::new(
        &mut out,
        parquet_schema(table)?,
        Arc::new(WriterProperties::builder().build()),
    )?;
    let mut group = writer.next_row_group()?;
    let mut column = 0;
    while let Some(mut writer) = group.next_column()? {
        let cells: Vec<&Cell> = table.rows.iter().map(|r| &r[column]).collect();
        let levels: Vec<i16> = cells
            .iter()
            .map(|c| i16::from(**c != Cell::Empty))
            .collect();
        match writer.untyped() {
            ColumnWriter::DoubleColumnWriter(w) => {
                let values = present(&cells, |c| match c {
                    Cell::Number(v) => Some(*v),
                    _ => None,
                });
                w.write_batch(&values, Some(&levels), None)?;
            }
            ColumnWriter::BoolColumnWriter(w) => {
                let values = present(&cells, |c| match c {
                    Cell::Bool(b) => Some(*b),
                    _ => None,
                });
                w.write_batch(&values, Some(&levels), None)?;
            }
            ColumnWriter::ByteArrayColumnWriter(w) => {
                let values = present(&cells, |c| Some(ByteArray::from(c.text().as_str())));
                w.write_batch(&values, Some(&levels), None)?;
            }
            _ => unreachable!("the schema has doubles, booleans and byte arrays only"),
        }
        writer.close()?;
        column += 1;
    }
    group.close()?;
    writer.close()?;
    Ok(out)
}

/// The values of a column's non-empty cells, which Parquet stores apart from the nulls.
fn present<T>(cells: &[&Cell], value: impl Fn(&Cell) -> Option<T>) -> Vec<T> {
    cells
        .iter()
        .filter(|c| ***c != Cell::Empty)
        .filter_map(|c| value(c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_writes_quoted_csv_with_whole_numbers_whole() {
        let leading = vec!["point".to_string(), "ssd.ftl".to_string()];
        let rows = vec![
            vec![
                ("point".into(), Cell::Text("a".into())),
                ("x".into(), Cell::Number(1.0)),
            ],
            vec![
                ("point".into(), Cell::Text("b,\"q\"".into())),
                ("ssd.ftl".into(), Cell::Text("page".into())),
                ("y".into(), Cell::Number(0.25)),
                ("x".into(), Cell::Number(3e20)),
            ],
        ];
        let table = Table::from_named(&leading, &rows);
        let mut out = Vec::new();
        write_sweep_csv(&table, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "point,ssd.ftl,x,y\na,,1,\n\"b,\"\"q\"\"\",page,300000000000000000000,0.25\n"
        );
    }

    #[test]
    fn the_parquet_file_reads_back_with_types_and_nulls() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        use parquet::record::Field;
        let table = Table {
            columns: vec![
                "ssd.ftl".into(),
                "summary.all.iops".into(),
                "run.cancelled".into(),
                "mixed".into(),
            ],
            rows: vec![
                vec![
                    Cell::Text("page".into()),
                    Cell::Number(1500.5),
                    Cell::Bool(false),
                    Cell::Number(1.0),
                ],
                vec![
                    Cell::Text("dftl".into()),
                    Cell::Empty,
                    Cell::Bool(true),
                    Cell::Text("x".into()),
                ],
            ],
        };
        let bytes = sweep_parquet(&table).unwrap();
        let reader = SerializedFileReader::new(bytes::Bytes::from(bytes)).unwrap();
        assert_eq!(reader.metadata().file_metadata().num_rows(), 2);
        let rows: Vec<Vec<(String, Field)>> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap().into_columns())
            .collect();
        assert_eq!(
            rows[0][0],
            ("ssd.ftl".to_string(), Field::Str("page".into()))
        );
        assert_eq!(rows[0][1].1, Field::Double(1500.5));
        assert_eq!(rows[1][1].1, Field::Null);
        assert_eq!(rows[1][2].1, Field::Bool(true));
        // A column of numbers and text is text throughout.
        assert_eq!(rows[0][3].1, Field::Str("1".into()));
        assert_eq!(rows[1][3].1, Field::Str("x".into()));
    }

    #[test]
    fn a_points_entry_holds_only_the_parameters_it_sets() {
        let point = Point {
            id: "0123456789abcdef".into(),
            label: "ssd.ftl=dftl seed=2".into(),
            device: "flashsim-2009".into(),
            set: Vec::new(),
            workload: "synthetic:rw=read".into(),
            options: Vec::new(),
            seed: 2,
            parameters: vec![
                ("device".into(), Cell::Text("flashsim-2009".into())),
                ("ssd.ftl".into(), Cell::Text("dftl".into())),
                ("bs".into(), Cell::Empty),
                ("seed".into(), Cell::Number(2.0)),
            ],
        };
        let json = sweep_point_json(&point);
        assert_eq!(json["id"], "0123456789abcdef");
        assert_eq!(json["parameters"]["ssd.ftl"], "dftl");
        assert_eq!(json["parameters"]["seed"], 2);
        assert!(json["parameters"].get("bs").is_none(), "{json}");
    }
}
