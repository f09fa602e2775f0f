import type { ComponentChildren, HTMLAttributes } from 'preact';
import { dateTime, relative } from './format.ts';
import { type Paged, PagedList } from './paged.tsx';

type CellAttributes = HTMLAttributes<HTMLTableCellElement> & Record<`data-${string}`, string | undefined>;
type RowAttributes = HTMLAttributes<HTMLTableRowElement> & Record<`data-${string}`, string | undefined>;

/**
 * One column of a DataTable: its header and how a row fills its cell. `class` goes on the header and
 * every cell (`num` right-aligns figures); `rowHeader` makes the cell a `<th scope="row">` that names
 * its row for screen readers; `hideHeader` keeps the header for them only (an actions column).
 */
export interface Column<T> {
  header: ComponentChildren;
  cell: (row: T) => ComponentChildren;
  /** Preact's key for the column; the header's text when it is a string. */
  key?: string;
  class?: string;
  rowHeader?: boolean;
  hideHeader?: boolean;
  /** Attributes of one row's cell beyond `class` (a per-row class, a test id). */
  cellProps?: (row: T) => CellAttributes;
}

/** A column list may hold `false`/`null` where a column is shown only sometimes. */
export type Columns<T> = (Column<T> | false | null | undefined)[];

export interface DataTableProps<T> {
  rows: T[];
  columns: Columns<T>;
  rowKey: (row: T) => string | number;
  /** Names the table: its <caption>, visually hidden unless `showCaption`. */
  caption: ComponentChildren;
  showCaption?: boolean;
  /** Names the scrolling region around it (TableWrap); none when `label` is absent (a nested table). */
  label?: string;
  class?: string;
  /** Attributes of a row's <tr> (data-testid, data-status…). */
  rowProps?: (row: T) => RowAttributes;
  /** A row shown under a row, spanning every column (an expanded detail), or nothing. */
  detail?: (row: T) => { id: string; content: ComponentChildren } | null;
  /** Shown in place of the table when there is no row; without it an empty table is shown. */
  empty?: ComponentChildren;
  /** Shown as a row of the table, spanning every column, when there is no row (a folder is empty). */
  emptyRow?: ComponentChildren;
  /** A row spanning every column before the items (a link to the parent folder). */
  firstRow?: ComponentChildren;
  testid?: string;
}

/**
 * A table whose columns are data: a caption (and a named, focusable scroller), `th scope="col"`
 * headers, one row per item, an optional row header and detail row, and the empty state.
 */
export function DataTable<T>(props: DataTableProps<T>) {
  const columns = props.columns.filter((c): c is Column<T> => Boolean(c));
  if (props.rows.length === 0 && props.empty !== undefined) return <>{props.empty}</>;
  const table = (
    <table class={props.class} data-testid={props.testid}>
      <caption class={props.showCaption ? undefined : 'visually-hidden'}>{props.caption}</caption>
      <thead>
        <tr>
          {columns.map((c, i) => (
            <th key={columnKey(c, i)} scope="col" class={c.class}>
              {c.hideHeader ? <span class="visually-hidden">{c.header}</span> : c.header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {props.firstRow ? (
          <tr>
            <td colSpan={columns.length}>{props.firstRow}</td>
          </tr>
        ) : null}
        {props.rows.length === 0 && props.emptyRow ? (
          <tr>
            <td colSpan={columns.length} class="muted">
              {props.emptyRow}
            </td>
          </tr>
        ) : null}
        {props.rows.map((row) => {
          const key = props.rowKey(row);
          const detail = props.detail?.(row);
          return [
            <tr key={key} {...props.rowProps?.(row)}>
              {columns.map((c, i) => {
                const { class: extra, ...rest } = c.cellProps?.(row) ?? {};
                const cls = [c.class, extra].filter(Boolean).join(' ') || undefined;
                return c.rowHeader ? (
                  <th key={columnKey(c, i)} scope="row" class={cls} {...rest}>
                    {c.cell(row)}
                  </th>
                ) : (
                  <td key={columnKey(c, i)} class={cls} {...rest}>
                    {c.cell(row)}
                  </td>
                );
              })}
            </tr>,
            detail ? (
              <tr key={`${key}-detail`} id={detail.id} class="detail-row">
                <td colSpan={columns.length}>{detail.content}</td>
              </tr>
            ) : null,
          ];
        })}
      </tbody>
    </table>
  );
  return props.label ? <TableWrap label={props.label}>{table}</TableWrap> : table;
}

const columnKey = <T,>(c: Column<T>, i: number): string => c.key ?? (typeof c.header === 'string' ? c.header : String(i));

/**
 * A paged list (usePaged) as a DataTable: its error, the first load's progress, `empty` when the
 * first page is empty, and the button that loads the next page (PagedList).
 */
export function PagedTable<T>(
  props: Omit<DataTableProps<T>, 'rows' | 'empty'> & { list: Paged<T>; what: string; empty: ComponentChildren; moreLabel?: string },
) {
  const { list, what, empty, moreLabel, ...table } = props;
  return (
    <PagedList list={list} what={what} empty={empty} moreLabel={moreLabel}>
      {(items) => <DataTable {...table} rows={items} />}
    </PagedList>
  );
}

/** A moment as "3 hours ago", with the exact date and time on hover and for machines. */
export function Ago(props: { at: string }) {
  return (
    <time dateTime={props.at} title={dateTime(props.at)}>
      {relative(props.at)}
    </time>
  );
}

/**
 * A table's horizontal scroller (`.table-wrap`) as a region named for what it lists. It takes the
 * focus so that the keyboard can scroll it at 375 px even when its rows hold no control (axe:
 * scrollable-region-focusable).
 */
export function TableWrap(props: { label: string; children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must take the focus for the keyboard to scroll it (WCAG 2.1.1)
    <section class="table-wrap" aria-label={props.label} tabIndex={0}>
      {props.children}
    </section>
  );
}
