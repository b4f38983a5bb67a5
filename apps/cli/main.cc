// The `stalelearn` program: the command line (cli_main.h) with the built-in
// apps, one registration line each.
#include "apps/cli/cli_main.h"
#include "apps/lda/register.h"
#include "apps/lr/register.h"
#include "apps/mf/register.h"
#include "apps/snn/register.h"
#include "apps/snn/snn_bench.h"

int main(int argc, char** argv) {
  return stalelearn::cli::Main(argc, argv,
                               {
                                   &stalelearn::apps::mf::RegisterApp,
                                   &stalelearn::apps::lr::RegisterApp,
                                   &stalelearn::apps::lda::RegisterApp,
                                   &stalelearn::apps::snn::RegisterApp,
                               },
                               {
                                   {"snn", "Spiking network: dense against sparse training throughput per activity cap",
                                    &stalelearn::apps::snn::RunSnnBench},
                               });
}
