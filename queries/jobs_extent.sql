-- The span the scheduler's job records cover: the first start and the last start or end of any
-- job. A host cable's flap inside it during which no job ran on the host harmed no job (issue
-- #23); outside it nothing can be said.
select min(start_at) as first_at, greatest(max(start_at), max(end_at)) as last_at
from jobs;
