-- Per source and reason: how many lines were not understood or not mapped, with an example.
select i.source_id, s.kind, s.path, i.reason, i.lines, i.first_line_no, i.example
from source_issues i
join sources s using (source_id)
order by i.source_id desc, i.lines desc;
