-- For every port that ever carried a link (up to $until): its last peer. Sorted by port: the
-- fabric cache keeps a node's peers together (auditor/store/fabric_codec.py).
with ends as (
    select seen_at, a_guid as guid, a_port as port, b_guid as peer_guid, b_port as peer_port
    from links where seen_at <= $until
    union all
    select seen_at, b_guid, b_port, a_guid, a_port from links where seen_at <= $until
)
select guid, port, arg_max(peer_guid, seen_at) as peer_guid,
       arg_max(peer_port, seen_at) as peer_port
from ends
group by guid, port
order by guid, port;
