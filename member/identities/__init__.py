"""Label identities: the member exports one LabelIdentity per distinct (Namespace labels,
Pod labels) pair among its Pods, when ``enableStretchedNetworkPolicy`` is on."""

from member.identities.controller import LabelIdentityController

__all__ = ["LabelIdentityController"]
