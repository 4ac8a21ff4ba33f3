-- Per kind, how many sources were observed between $since and $until (a snapshot's --at, an
-- ibdiagnet run's own time): which tools the fabric was read through in a window.
select kind, count(*) as sources
from sources
where observed_at between $since and $until
group by kind
order by kind;
