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
// nulls become null. With only set and an instance_id column in the file,
// only the rows with those ids are read (the others are never decoded).
func parquetRows(ctx context.Context, path string, data []byte, only map[string]bool) ([]row, error) {
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("%s: read parquet: %w", path, err)
	}
	var names []string
	for _, f := range pf.Schema().Fields() {
		names = append(names, f.Name())
	}
	r := parquet.NewReader(pf)
	defer r.Close()
	pr := parquetRowReader{path: path, names: names}

	if only != nil {
		idx, ok, err := parquetSelect(pf, only)
		if err != nil {
			return nil, fmt.Errorf("%s: read parquet column instance_id: %w", path, err)
		}
		if ok {
			var rows []row
			for _, i := range idx {
				if err := r.SeekToRow(i); err != nil {
					return nil, fmt.Errorf("%s: read parquet row %d: %w", path, i, err)
				}
				rw, err := pr.read(r, int(i))
				if err != nil {
					return nil, err
				}
				rows = append(rows, rw)
			}
			return rows, nil
		}
	}

	var rows []row
	for i := 0; ; i++ {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		rw, err := pr.read(r, i)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		rows = append(rows, rw)
	}
	return rows, nil
}

// parquetRowReader turns parquet rows into JSON rows.
type parquetRowReader struct {
	path  string
	names []string
	buf   bytes.Buffer
	enc   *json.Encoder
}

// read reads the reader's next row, row i of the file; io.EOF (unwrapped)
// when there is none.
func (p *parquetRowReader) read(r *parquet.Reader, i int) (row, error) {
	if p.enc == nil {
		p.enc = json.NewEncoder(&p.buf)
		p.enc.SetEscapeHTML(false)
	}
	var v any
	if err := r.Read(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return row{}, io.EOF
		}
		return row{}, fmt.Errorf("%s: read parquet row %d: %w", p.path, i, err)
	}
	values, _ := v.(map[string]any)
	// Build the object in column order, noting where each value sits.
	var obj bytes.Buffer
	spans := make([][2]int, len(p.names))
	obj.WriteByte('{')
	for j, name := range p.names {
		if j > 0 {
			obj.WriteByte(',')
		}
		p.buf.Reset()
		p.enc.Encode(name)
		obj.Write(bytes.TrimSuffix(p.buf.Bytes(), []byte("\n")))
		obj.WriteByte(':')
		p.buf.Reset()
		if err := p.enc.Encode(values[name]); err != nil {
			return row{}, fmt.Errorf("%s: row %d: column %s: %w", p.path, i, name, err)
		}
		spans[j][0] = obj.Len()
		obj.Write(bytes.TrimSuffix(p.buf.Bytes(), []byte("\n")))
		spans[j][1] = obj.Len()
	}
	obj.WriteByte('}')
	raw := obj.Bytes()
	m := make(map[string]json.RawMessage, len(p.names))
	for j, name := range p.names {
		m[name] = json.RawMessage(raw[spans[j][0]:spans[j][1]:spans[j][1]])
	}
	return row{index: i, raw: raw, m: m, native: values}, nil
}

// parquetSelect returns the indexes of the rows whose instance_id column
// holds one of ids, reading that column alone. ok is false when the file has
// no such column (the ids then come from other fields: read every row).
func parquetSelect(pf *parquet.File, ids map[string]bool) (idx []int64, ok bool, err error) {
	leaf, found := pf.Schema().Lookup("instance_id")
	if !found || leaf.Node.Type().Kind() != parquet.ByteArray {
		return nil, false, nil
	}
	var base int64
	buf := make([]parquet.Value, 256)
	for _, rg := range pf.RowGroups() {
		pages := rg.ColumnChunks()[leaf.ColumnIndex].Pages()
		n := base
		for {
			p, err := pages.ReadPage()
			if err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				pages.Close()
				return nil, false, err
			}
			vr := p.Values()
			for {
				k, err := vr.ReadValues(buf)
				for _, v := range buf[:k] {
					if v.RepetitionLevel() == 0 {
						if !v.IsNull() && ids[string(v.ByteArray())] {
							idx = append(idx, n)
						}
						n++
					}
				}
				if err != nil {
					if errors.Is(err, io.EOF) {
						break
					}
					parquet.Release(p)
					pages.Close()
					return nil, false, err
				}
			}
			parquet.Release(p)
		}
		pages.Close()
		base += rg.NumRows()
	}
	return idx, true, nil
}
