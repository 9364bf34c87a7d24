// Policy files: a network trained across graphs (`devplace train`) as a
// sealed file (learned/files/checkpoint_file.h) with what it was trained on
// and for (learned/files/policy_file_facts.h), for GDP and for Mars. Loading
// checks the file against the cluster it is to place on.
#pragma once

#include <string>

#include "cluster/cluster.h"
#include "learned/files/policy_file_facts.h"
#include "learned/networks/gdp_net.h"
#include "learned/networks/mars_net.h"

namespace devplace {

// A trained network as a file: its architecture, vocabulary, the cluster it
// was trained for (device count and kinds), what it was trained on, and its
// parameters, sealed with a checksum (learned/files/checkpoint_file.h).
using GdpPolicyFileFacts = PolicyFileFacts;
void SaveGdpPolicyFile(const std::string& path, GdpNet& net, const GdpPolicyFileFacts& facts);

// Loads the network of the file at `path` for `cluster`; throws Error in
// one line naming the file when it is not a GDP policy file, is damaged,
// has a fixed head trained for another device count or other device kinds,
// or has a device-scoring head that reads a device feature this build does
// not compute. A device-scoring head places on any cluster.
GdpNet LoadGdpPolicyFile(const std::string& path, const Cluster& cluster, GdpPolicyFileFacts* facts = nullptr);

// A Mars network trained across graphs (`devplace train --method mars`) as a
// file: the encoder's and the placer's architecture, the cluster it was
// trained for and what on (learned/files/policy_file_facts.h), and its parameters,
// sealed with a checksum.
void SaveMarsPolicyFile(const std::string& path, MarsNet& net, const PolicyFileFacts& facts);
// Throws Error in one line naming the file when it is not a Mars policy
// file, is damaged, or was trained for another device count or kinds.
MarsNet LoadMarsPolicyFile(const std::string& path, const Cluster& cluster, PolicyFileFacts* facts = nullptr);

}  // namespace devplace
