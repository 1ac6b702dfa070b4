"""The execution paths of the layer; each computes the same function (see fusedmoe.api)."""
