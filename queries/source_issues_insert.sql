-- What sources could not use, one row per source and reason, with the first line as an example.
insert into source_issues (source_id, reason, lines, first_line_no, example)
select unnest($source_id), unnest($reason), unnest($lines), unnest($first_line_no),
       unnest($example);
