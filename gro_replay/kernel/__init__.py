"""The kernel models: one module per kernel source file, named after its basename where there is one.

Each module's docstring names the functions it mirrors, the versions it was read in and what it leaves out; the
version differences are ``model.KernelModel`` switches named after their commits. Module → C source file(s)
(``none:`` marks a module that is not one kernel file, and says what it is):

- ``af_inet.py``: net/ipv4/af_inet.c
- ``banner.py``: none: the longer strings naming the stable release a distribution kernel is built from
  (``/proc/version``, Debian's ``uname -v``, Ubuntu's ``/proc/version_signature``)
- ``dst_metadata.py``: include/net/dst_metadata.h
- ``distro.py``: none: distribution kernel release strings (``uname -r``): whose build and which upstream release
- ``drop_reasons.py``: none: the stack's drop reasons between the GRO stages (IP/UDP input, VXLAN/Geneve receive,
  gro_cells), modelled on include/net/dropreason-core.h
- ``eth.py``: net/ethernet/eth.c
- ``geneve.py``: drivers/net/geneve.c
- ``gre_offload.py``: net/ipv4/gre_offload.c (the encap_mark test of ``gre_gro_receive`` only; the rest flushes, said as not modelled)
- ``gro.py``: net/core/gro.c (net/core/dev.c before v5.17), include/net/gro.h ``call_gro_receive``
- ``gro_csum.py``: include/net/gro.h checksum helpers, net/core/gro.c ``__skb_gro_checksum_complete``
- ``gro_cells.py``: net/core/gro_cells.c
- ``handler_miss.py``: none: the value a GRO handler look-up missed (ethertype, IP protocol), in its reason and named
- ``ip6_offload.py``: net/ipv6/ip6_offload.c
- ``ip_tunnel_core.py``: net/ipv4/ip_tunnel_core.c, include/net/inet_ecn.h
- ``kernel.py``: none: one simulated kernel: its offload tables (filled by the kernel's ``*_offload_init`` calls), its
  UDP tunnel sockets and devices, and the stack between the two GRO stages
- ``model.py``: none: the behaviour switches, one per kernel commit, and the release profiles built from them
- ``names.py``: none: the names the command line offers before anything heavy is imported
- ``napi.py``: net/core/dev.c (``napi_poll``, ``napi_complete_done``, ``netif_elide_gro``)
- ``netdevice.py``: include/linux/netdevice.h
- ``nic.py``: none: the drivers' RX checksum state and RX hash (gro-spec §7: ice, i40e, mlx5, virtio-net)
- ``nic_skb.py``: none: the skb layout (``head_frag``, page frags) each ``--nic`` preset's driver builds
- ``reassembly.py``: net/ipv6/reassembly.c (``ipv6_frag_rcv``'s test of a fragment header that fragments nothing)
- ``release.py``: none: kernel release strings (``uname -r``, stable, rc, distribution builds) → a ``KernelModel``
- ``reasons.py``: none: every GRO flush and flow-split reason, named after the kernel function and condition
- ``skbuff.py``: include/linux/skbuff.h, net/core/skbuff.c
- ``stable.py``: none: the stable branches' backports of the switches' commits and the branches that ended
- ``tcp_offload.py``: net/ipv4/tcp_offload.c, net/ipv6/tcpv6_offload.c
- ``udp.py``: net/ipv4/ip_input.c, net/ipv6/ip6_input.c, net/ipv4/udp.c
- ``udp_offload.py``: net/ipv4/udp_offload.c, net/ipv6/udp_offload.c
- ``udp_tunnel.py``: include/net/udp_tunnel.h, net/ipv4/udp_tunnel_core.c
- ``vlan_core.py``: net/8021q/vlan_core.c, include/linux/if_vlan.h
- ``vxlan_core.py``: drivers/net/vxlan/vxlan_core.c

tests/test_layout.py checks that this map lists every module and that each C file it names appears in that
module's own docstring.
"""
