package task

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// parquetRows reads every row of a parquet file as a JSON object whose keys
// follow the file's column order. Columns are found by name, so files that
// order them differently read the same; LIST columns become JSON arrays and
// nulls become null.
func parquetRows(ctx context.Context, path string, data []byte) ([]row, error) {
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%s: read parquet: %w", path, err)
	}
	var names []string
	for _, f := range pf.Schema().Fields() {
		names = append(names, f.Name())
	}
	r := parquet.NewReader(pf)
	defer r.Close()

	var rows []row
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := 0; ; i++ {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		var v any
		if err := r.Read(&v); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%s: read parquet row %d: %w", path, i, err)
		}
		values, _ := v.(map[string]any)
		// Build the object in column order, noting where each value sits.
		var obj bytes.Buffer
		spans := make([][2]int, len(names))
		obj.WriteByte('{')
		for j, name := range names {
			if j > 0 {
				obj.WriteByte(',')
			}
			buf.Reset()
			enc.Encode(name)
			obj.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
			obj.WriteByte(':')
			buf.Reset()
			if err := enc.Encode(values[name]); err != nil {
				return nil, fmt.Errorf("%s: row %d: column %s: %w", path, i, name, err)
			}
			spans[j][0] = obj.Len()
			obj.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
			spans[j][1] = obj.Len()
		}
		obj.WriteByte('}')
		raw := obj.Bytes()
		m := make(map[string]json.RawMessage, len(names))
		for j, name := range names {
			m[name] = json.RawMessage(raw[spans[j][0]:spans[j][1]:spans[j][1]])
		}
		rows = append(rows, row{index: i, raw: raw, m: m, native: values})
	}
	return rows, nil
}
