!> Lie-group generalized-alpha on (R^3 x SO(3))^nb (Arnold, Brüls, Cardona 2015):
!> index 3 (variant 0) and a stabilized index-2 variant (variant 1).
!>
!> One step from (q_n, V_n, Vdot_n, a_n) with the unknown Vdot_{n+1} =: W:
!>   (1 - am) a_{n+1} = (1 - af) W + af Vdot_n - am a_n
!>   V_{n+1}  = V_n + h (1 - gamma) a_n + h gamma a_{n+1}
!>   psi      = h V_n + h^2 (1/2 - beta) a_n + h^2 beta a_{n+1}  [+ beta h^2 B(q_n)^T mu]
!>   q_{n+1}  = q_n o exp(psi):  x + psi_x,  R expm(psi_theta)
!>   M W + B(q_{n+1})^T lam - Q(V_{n+1}) = 0
!>   Phi(q_{n+1}) / (beta h^2) = 0
!>   [variant 1:  B(q_{n+1}) V_{n+1} / (gamma h) = 0]
!> The multiplier mu of the stabilized variant moves q_{n+1} along B(q_n)^T
!> (a GGL-type correction evaluated at the known q_n, so no derivative of B^T mu
!> is needed); it keeps Phi = 0 and B V = 0 together.  alpha parameters from
!> rho_inf as in genalpha.f90 (Chung-Hulbert): the same alpha_params.
!>
!> Newton on z = (W, lam[, mu]) with the exact Jacobian; with c = (1-af)/(1-am),
!> P' = diag(I, T(psi_theta_i)), B1 = B(q_{n+1}), B0 = B(q_n):
!>   [ M - h gamma c Q_V + h^2 beta c (B1^T lam)_q P'   B1^T   beta h^2 (B1^T lam)_q P' B0^T ]
!>   [ c B1 P'                                          0      B1 P' B0^T                     ]
!>   [ c B1 + (h beta c/gamma) (B1 V)_q P'              0      (beta h/gamma) (B1 V)_q P' B0^T ]
!> Above SMALL_MAX unknowns it is assembled from the joints' blocks (ga_assemble), the mu columns
!> through the auxiliary y = B0^T mu.  A step of the stabilized variant that fails next to a
!> singular configuration is retaken with mu fixed at 0, the index-3 step, and if that fails too,
!> with B's near-null directions left out of Newton's increments (ga_filtered; lga_step).
!> Termination: the one rule of every implicit kernel, pyint_newton_control
!> (fortran/core/newton_control.f90), in the Lie steppers' one Newton iteration
!> (fortran/core/lie_stepper.f90); groups at ga_measure.
!>
!> Variable steps (self%adaptive, fortran/core/driver.f90 drive_adaptive; the derivation is
!> docs/adaptive_steps.md section 8, checked on its NumPy prototype tests/lie_adaptive_numpy.py):
!>  * the a and V recursions are the vector ones in the algebra, so a_n approximates
!>    Vdot(t_n + o_n) with (1 - am) o_{n+1} + am o_n = delta h_n (delta = am - af, o_0 = 0), and
!>    before each step a_n* = a_n + (delta h_n - o_n) (a_n - a_{n-1}*) / (t_n + o_n - s_{n-1})
!>    (the history af Vdot_n - am a_n of the a recursion is formed from a_n*: the shift of
!>    docs/adaptive_steps.md eq. (4));
!>  * local errors: V: h^3 C_v V^(3) (the vector eq. (8)); the increment psi against the exact
!>    one log(q(t_n)^-1 q(t_n + h)) = h V + h^2/2 Vdot + h^3/6 Vddot + h^3/12 [V, Vdot] + O(h^4):
!>    h^3 C_q Vddot - h^3/12 [V, Vdot] ([., .] = Omega x Omegadot on so(3), 0 on R^3), C_q, C_v
!>    of eqs. (6)-(8); estimated by the divided differences of a over s = t + o (eqs. (9), (10)),
!>    the bracket by the mean of V x Vdot at both ends; projected as eq. (11) with C = B(q_{n+1}),
!>    D = B(q_n)^T (mu's direction) for psi, D = M^-1 B^T for V; the psi estimate enters the
!>    driver's err_q as its effect on the packed q: dx_i = e_x,i, dR_i = R_i hat(e_th,i);
!>  * only the stabilized variant runs adaptively (init refuses variant 0: index 3 collapses under
!>    step control, docs/adaptive_steps.md 1.6).
module lie_genalpha
  use pyint_kinds
  use pyint_rigid
  use pyint_alpha, only: alpha_params_t, alpha_params, alpha_error_constants
  use pyint_newton_control, only: maxabs, newton_control_t, NEWTON_FLOOR, NEWTON_KAPPA
  use pyint_linalg, only: lu_factor, lu_solve, lu_factor_solve
  use pyint_newton_matrix, only: newton_matrix_t
  use pyint_so3, only: hat, cross
  use pyint_driver, only: state_t
  use pyint_lie_stepper, only: lie_stepper_t, lie_work_init, lie_pack, lie_structure_record, lie_structure_setup, &
                               lie_tangents, lie_add_mass, lie_add_force_v, lie_add_vv, lie_add_mv, lie_add_vm, &
                               lie_add_identity, lie_mass_times, lie_b_times, lie_bt_times, &
                               lie_near_null_split
  use pyint_seam, only: NSTATS_LIE_GENALPHA, NIOPT_LIE_GENALPHA, NROPT_LIE_GENALPHA, IOPT_LIE_GENALPHA_VARIANT, &
                        IOPT_LIE_GENALPHA_MAXIT, ROPT_LIE_GENALPHA_TOL, ROPT_LIE_GENALPHA_RHO_INF, &
                        IOPT_LIE_GENALPHA_LINEAR_SOLVER, STAT_LIE_GENALPHA_LINEAR_SOLVER
  implicit none
  private
  public :: lie_genalpha_stepper_t, LGA_INDEX3, LGA_STAB2

  integer, parameter :: LGA_INDEX3 = 0, LGA_STAB2 = 1

  !> The stepper of the one driver (fortran/core/driver.f90, fortran/core/lie_stepper.f90).
  !> iopt = [variant, maxit], ropt = [rho_inf, tol].  The state's a is Vdot; the auxiliary
  !> vector per sample (a, mu): the algorithmic acceleration and, for variant 1, the
  !> stabilizing multiplier.  stats = [Newton iterations, factorizations, max iterations in
  !> a step].  Its Newton blocks besides the common ones (self%w): B(q_n) (b0), B(q_{n+1}) (b1),
  !> the known part psi0 of the increment, V_{n+1} (v1) and a_{n+1} (a1) at the iterate.
  !> The variable-step state (docs/adaptive_steps.md 8): a approximates Vdot(t + off); a_start,
  !> s_start: the shifted a the last step started from and the time it approximates Vdot at; with
  !> a, mu, (x, R) and the Newton rule's state what the driver's save_state / restore_state keep.
  type :: lga_saved_t
    real(wp) :: off = 0, s_start = 0
    logical :: has_start = .false.
    real(wp), allocatable :: a_start(:), aalg(:), mu(:), x(:, :), r(:, :, :)
    type(newton_control_t) :: nc
  end type

  type, extends(lie_stepper_t) :: lie_genalpha_stepper_t
    type(alpha_params_t) :: p
    integer :: variant = LGA_INDEX3
    !> the stabilized variant's step retaken with mu = 0 (lga_step: the index-3 step at a crossing)
    logical :: mu_fixed = .false.
    real(wp), allocatable :: aalg(:), mu(:)
    real(wp), allocatable :: b0(:, :), b1(:, :), psi0(:), v1(:), a1(:)
    real(wp) :: off = 0, s_start = 0, cq = 0, cv = 0   !< variable steps (lga_estimates)
    logical :: has_start = .false.
    real(wp), allocatable :: a_start(:)
    type(lga_saved_t) :: slots(2)
    !> variable steps with the structured Newton matrix: the projections of the estimates (eq.
    !> (11)) as the saddle-point systems [P D; C 0] of the joints' blocks (lga_project)
    type(newton_matrix_t) :: pm
  contains
    procedure :: init => lga_init
    procedure :: step => lga_step
    procedure :: save_state => lga_save
    procedure :: restore_state => lga_restore
    procedure :: aux => lga_aux
    procedure :: newton_eval => ga_eval
    procedure :: newton_measure => ga_measure
    procedure :: residual_at_floor => ga_floor
    procedure :: filtered_increment => ga_filtered
    procedure :: finish => lga_finish
  end type

contains

  !> q_{n+1}, V_{n+1}, a_{n+1} at the iterate (w%x1, w%r1, self%v1, self%a1, w%psi).
  subroutine ga_kinematics(self, h, v, vd)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, v(:), vd(:)
    associate (s => self%sys, variant => self%variant, p => self%p, x => self%x, r => self%r, &
               a => self%aalg, w => self%w)
      associate (wd => w%z(1:w%nv))
        self%a1 = ((1 - p%alpha_f) * wd + p%alpha_f * vd - p%alpha_m * a) / (1 - p%alpha_m)
        self%v1 = v + h * (1 - p%gamma) * a + h * p%gamma * self%a1
        w%psi = self%psi0 + h * h * p%beta * self%a1
        if (variant == LGA_STAB2) w%psi = w%psi + p%beta * h * h * matmul(w%z(w%nv + w%m + 1:), self%b0)
      end associate
      call rigid_advance(s, x, r, w%psi, w%x1, w%r1)
    end associate
  end subroutine

  !> Residual and Newton matrix at the iterate w%z; u = V_n, u2 = Vdot_n.
  subroutine ga_eval(self, h, u, u2)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, u(:), u2(:)
    integer :: nv, m, i
    real(wp) :: c, bh2
    associate (s => self%sys, variant => self%variant, p => self%p, w => self%w, v => u, vd => u2)
      nv = w%nv; m = w%m
      c = p%c
      bh2 = p%beta * h * h
      call ga_kinematics(self, h, v, vd)
      associate (wd => w%z(1:nv), lam => w%z(nv + 1:nv + m))
        call rigid_bmat(s, w%r1, self%b1)
        call rigid_force(s, self%v1, w%qf)
        if (w%structured) then                               ! the products by the joints' blocks
          w%res(1:nv) = lie_mass_times(s, wd) + lie_bt_times(w%blk, self%b1, lam) - w%qf
        else
          w%res(1:nv) = matmul(w%mm, wd) + matmul(lam, self%b1) - w%qf
        end if
        call rigid_phi(s, w%x1, w%r1, w%res(nv + 1:nv + m))
        w%res(nv + 1:nv + m) = w%res(nv + 1:nv + m) / bh2
        if (variant == LGA_STAB2 .and. self%mu_fixed) then     ! the rows mu = 0 (lga_step)
          associate (mu => w%z(nv + m + 1:))
            if (w%structured) then                           ! B0 B0^T mu = 0 (ga_assemble)
              w%res(nv + m + 1:) = lie_b_times(w%blk, self%b0, lie_bt_times(w%blk, self%b0, mu))
            else
              w%res(nv + m + 1:) = mu
            end if
          end associate
        else if (variant == LGA_STAB2) then
          if (w%structured) then
            w%res(nv + m + 1:) = lie_b_times(w%blk, self%b1, self%v1) / (p%gamma * h)
          else
            w%res(nv + m + 1:) = matmul(self%b1, self%v1) / (p%gamma * h)
          end if
        end if
        if (w%structured) then
          call ga_assemble(self, h, lam)
          return
        end if
        w%jac = 0
        call rigid_force_v(s, self%v1, w%kvv)
        w%jac(1:nv, 1:nv) = w%mm - h * p%gamma * c * w%kvv
        call rigid_btl_q(s, w%r1, lam, w%kvv)
        call rigid_right_tangent(s, w%psi, w%kvv)          ! (B1^T lam)_q P'
        w%jac(1:nv, 1:nv) = w%jac(1:nv, 1:nv) + bh2 * c * w%kvv
        w%jac(1:nv, nv + 1:nv + m) = transpose(self%b1)
        w%kmv = self%b1
        call rigid_right_tangent(s, w%psi, w%kmv)          ! B1 P'
        w%jac(nv + 1:nv + m, 1:nv) = c * w%kmv
        if (variant == LGA_STAB2 .and. self%mu_fixed) then
          do i = nv + m + 1, w%nz
            w%jac(i, i) = 1
          end do
        else if (variant == LGA_STAB2) then
          w%jac(1:nv, nv + m + 1:) = bh2 * matmul(w%kvv, transpose(self%b0))
          w%jac(nv + 1:nv + m, nv + m + 1:) = matmul(w%kmv, transpose(self%b0))
          call rigid_bw_q(s, w%r1, self%v1, w%kmv)
          call rigid_right_tangent(s, w%psi, w%kmv)        ! (B1 V)_q P'
          w%jac(nv + m + 1:, 1:nv) = c * self%b1 + (h * p%beta * c / p%gamma) * w%kmv
          w%jac(nv + m + 1:, nv + m + 1:) = (p%beta * h / p%gamma) * matmul(w%kmv, transpose(self%b0))
        end if
      end associate
    end associate
  end subroutine

  !> The structured Newton matrix of ga_eval (the matrix of the header, entry by entry from the
  !> bodies' and joints' blocks: w%jm) at the iterate's V_{n+1} (self%v1), B1 (self%b1), psi,
  !> lam; every entry it can touch is added whatever its value (the pattern is recorded by a call).
  !> The stabilized variant's mu columns through the auxiliary y = B0^T mu (unknowns nz + 1 .. nz
  !> + nv, rows y - B0^T mu = 0): the columns of y are those of psi's dependence, times beta h^2:
  !>   [ M - h gamma c Q_V + bh2 c K P'   B1^T  0         bh2 K P'             ]   K = (B1^T lam)_q
  !>   [ c B1 P'                          0     0         B1 P'                ]
  !>   [ c B1 + (h beta c/gamma) L P'     0     0         (beta h/gamma) L P'  ]   L = (B1 V)_q
  !>   [ 0                                0     -B0^T     I                    ]
  !> (eliminating y gives the dense matrix of the header).
  subroutine ga_assemble(self, h, lam)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, lam(:)
    integer :: nv, m, nz
    real(wp) :: c, bh2
    associate (s => self%sys, p => self%p, w => self%w)
      nv = w%nv; m = w%m; nz = w%nz
      c = p%c
      bh2 = p%beta * h * h
      call w%jm%zero()
      call lie_tangents(w, s%nb)
      call lie_add_mass(w%jm, s, 0, 0, 1.0_wp)
      call lie_add_force_v(w%jm, s, self%v1, 0, 0, -h * p%gamma * c)
      call rigid_btl_q(s, w%r1, lam, w%kvv)
      call lie_add_vv(w%blk, w%jm, s, w%kvv, 0, 0, bh2 * c)
      call lie_add_vm(w%blk, w%jm, self%b1, 0, nv, 1.0_wp)
      call lie_add_mv(w%blk, w%jm, self%b1, nv, 0, c, .true.)
      if (self%variant == LGA_STAB2 .and. self%mu_fixed) then
        ! mu = 0 (lga_step): the rows B0 y = 0, y - B0^T mu = 0, decoupled from (W, lam); zero
        ! right-hand sides give dy = dmu = 0 exactly, and (W, lam) the index-3 step
        call lie_add_mv(w%blk, w%jm, self%b0, nv + m, nz, 1.0_wp, .false.)
        call lie_add_identity(w%jm, nz, nv, 1.0_wp)
        call lie_add_vm(w%blk, w%jm, self%b0, nz, nv + m, -1.0_wp)
      else if (self%variant == LGA_STAB2) then
        call lie_add_vv(w%blk, w%jm, s, w%kvv, 0, nz, bh2)
        call lie_add_mv(w%blk, w%jm, self%b1, nv, nz, 1.0_wp, .true.)
        call rigid_bw_q(s, w%r1, self%v1, w%kmv)
        call lie_add_mv(w%blk, w%jm, self%b1, nv + m, 0, c, .false.)
        call lie_add_mv(w%blk, w%jm, w%kmv, nv + m, 0, h * p%beta * c / p%gamma, .true.)
        call lie_add_mv(w%blk, w%jm, w%kmv, nv + m, nz, p%beta * h / p%gamma, .true.)
        call lie_add_identity(w%jm, nz, nv, 1.0_wp)
        call lie_add_vm(w%blk, w%jm, self%b0, nz, nv + m, -1.0_wp)
      end if
    end associate
  end subroutine

  !> The groups, each in the units of what it changes: W (h |dW| against 1 + |V|), lam
  !> (h |dlam| against 1 + |M V|), mu (beta h^2 |dmu| against 1 + |x|).  The 1/(beta h^2) rows
  !> leave a round-off eps (1 + |x|) / (beta h^2) in W and lam: their floor is what changes
  !> the positions by an ulp.
  subroutine ga_measure(self, h)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h
    integer :: nv, m
    real(wp) :: sv, smv, sx
    associate (p => self%p, x => self%x, w => self%w)
      nv = w%nv; m = w%m
      sv = 1 + maxabs(self%v1)
      smv = 1 + maxabs(lie_mass_times(self%sys, self%v1))
      sx = (1 + maxval(abs(x))) / (p%beta * h * h)
      call w%nc%group(w%dz(1:nv), sv / h, max(maxabs(w%z(1:nv)), sx))
      call w%nc%group(w%dz(nv + 1:nv + m), smv / h, smv * sx / sv)
      if (self%variant == LGA_STAB2) call w%nc%group(w%dz(nv + m + 1:), sx, sx)
    end associate
  end subroutine

  !> The residual of ga_eval at its round-off floor (lie_newton): every row within NEWTON_FLOOR eps
  !> of what its terms' sizes let it be evaluated to: the momentum rows against |M W| + |B^T lam| +
  !> |Q|, Phi / (beta h^2) against (1 + |x|) / (beta h^2), B V / (gamma h) against |B| |V| / (gamma h).
  !> backward (next to a singular configuration, lie_newton): the momentum rows, forces, within
  !> NEWTON_KAPPA tol of the momenta over h (1 + |M V|) / h, the scale of the lam group (ga_measure);
  !> of a filtered step (ga_filtered) the constraint rows, the joints' closure, within NEWTON_KAPPA tol
  !> of the positions (1 + |x|): that step solves exactly the step of a joint geometry perturbed by
  !> them (the rows along B's near-null directions, which it does not solve), as it does that of a
  !> force perturbed by the momentum rows (Higham, Accuracy and Stability of Numerical Algorithms,
  !> 2nd ed., 1.10, 7.1: the backward error).
  logical function ga_floor(self, h, u, u2, backward)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, u(:), u2(:)
    logical, intent(in) :: backward
    real(wp) :: e, sm, sc
    integer :: nv, m
    associate (p => self%p, w => self%w)
      nv = w%nv; m = w%m
      e = NEWTON_FLOOR * epsilon(1.0_wp)
      if (backward) then
        sm = NEWTON_KAPPA * self%tol * (1 + maxabs(lie_mass_times(self%sys, self%v1))) / (e * h)
      else if (w%structured) then
        sm = maxabs(lie_bt_times(w%blk, abs(self%b1), abs(w%z(nv + 1:nv + m))))
      else
        sm = maxabs(matmul(abs(w%z(nv + 1:nv + m)), abs(self%b1)))
      end if
      if (.not. backward) sm = sm + maxabs(lie_mass_times(self%sys, w%z(1:nv))) + maxabs(w%qf)
      sc = e
      if (backward .and. self%filtered) sc = NEWTON_KAPPA * self%tol
      ga_floor = maxabs(w%res(1:nv)) <= e * sm .and. &
                 maxabs(w%res(nv + 1:nv + m)) <= sc * (1 + maxval(abs(w%x1))) / (p%beta * h * h)
      if (self%variant == LGA_STAB2 .and. .not. self%mu_fixed .and. ga_floor) &
        ga_floor = maxabs(w%res(nv + m + 1:)) <= e * nv * maxval(abs(self%b1)) * maxabs(self%v1) / (p%gamma * h)
    end associate
  end function

  !> The filtered increment of the index-3 step (lie_newton with self%filtered: lga_step's last retake
  !> of a step next to a singular configuration; mu fixed at 0).  With B1 = U diag(sigma) V^T split
  !> at NEAR_SINGULAR sigma_max (lie_near_null_split: U0, V0 the near-null singular vectors, U1 the
  !> other left ones, Vc the other right ones and B1's null space) the increment leaves W's component
  !> along V0 at the start's (dW = Vc a) and the constraint rows' along U0 out; lam keeps all its
  !> components:
  !>   [ A Vc                B1^T ] [ a    ]   [ -r_m      ]
  !>   [ c U1^T B1 P' Vc     0    ] [ dlam ] = [ -U1^T r_c ]
  !> A = M - h gamma c Q_V + beta h^2 c (B1^T lam)_q P', the Newton matrix's first block (ga_eval).
  !> Why: along a pair u, v (B1^T u = sigma v) the Newton matrix couples W_v and lam_u only through
  !> sigma, [a sigma; c sigma 0]: the constraint row along u fixes W_v to its round-off delta over
  !> sigma and lam_u to a delta / (c sigma^2), and (B1^T lam)_q P' brings their product back into the
  !> momentum rows at beta h^2 c |dlam| |dW| ~ delta^2 / sigma^3 (IFToMM A02 in space, N = 40,
  !> h = 1e-3, the step ending at t = 8.584: 40 of the 485 kept rows (41 of those kept from t = 0) at
  !> sigma / sigma_max 3e-7 ... 3.2e-6, the next at 0.22; |dlam| 1e2 ... 1e5 per iteration, the
  !> momentum rows stalled at 5e-8 ... 1e-6, above the backward test's 4.5e-8; at t = 1.244, sigma
  !> ratio 2e-6, at 1e-9: about the sigma^-3).  Without the pair's row and W's column, lam_u is set
  !> by the momentum row along v, the force sigma lam_u that holds the mechanism on its branch
  !> (|lam| 1.9e4 there), amplified by
  !> 1 / sigma only and multiplied by no noisy dW: the truncated SVD of the constraint block with the
  !> minimum-norm choice in W (P. C. Hansen, Rank-Deficient and Discrete Ill-Posed Problems, SIAM
  !> 1998, 3.2; Golub, Van Loan, Matrix Computations, 4th ed., 5.5).  W along V0 stays the last
  !> step's acceleration there (on the branch it changes by O(h)); the rows along U0 keep what that
  !> leaves of the method's local error, |Phi| 1e-12 m, within ga_floor's backward test.  (Dropping
  !> lam's components along U0 instead, the minimum-norm increment in lam, lets W_v take the free
  !> acceleration along v: B0's velocity 4.6e-4 off at that step, and |Phi| 4e-10 m along U0 from the
  !> run's state, beyond that test.)  Dense: B1's SVD and an LU of order nv + m - k per iteration,
  !> on such retaken steps only.
  subroutine ga_filtered(self, h, info)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h
    integer, intent(out) :: info
    real(wp), allocatable :: u1(:, :), vc(:, :), kk(:, :), x(:)
    integer, allocatable :: ipiv(:)
    integer :: nv, m, nc, n
    real(wp) :: c
    associate (s => self%sys, p => self%p, w => self%w)
      nv = w%nv; m = w%m
      c = p%c
      if (.not. all(abs(w%res) <= huge(1.0_wp))) then
        info = STATUS_NONFINITE
        return
      end if
      call lie_near_null_split(self%b1, u1, vc, info)
      if (info /= 0) then
        info = STATUS_SINGULAR
        return
      end if
      nc = size(vc, 2)
      n = nc + m
      allocate(kk(n, n), x(n), ipiv(n))
      kk = 0
      call rigid_force_v(s, self%v1, w%kvv)
      w%kvv = w%mm - h * p%gamma * c * w%kvv
      kk(1:nv, 1:nc) = matmul(w%kvv, vc)
      call rigid_btl_q(s, w%r1, w%z(nv + 1:nv + m), w%kvv)
      call rigid_right_tangent(s, w%psi, w%kvv)            ! (B1^T lam)_q P'
      kk(1:nv, 1:nc) = kk(1:nv, 1:nc) + p%beta * h * h * c * matmul(w%kvv, vc)
      kk(1:nv, nc + 1:) = transpose(self%b1)
      w%kmv = self%b1
      call rigid_right_tangent(s, w%psi, w%kmv)            ! B1 P'
      kk(nv + 1:, 1:nc) = c * matmul(transpose(u1), matmul(w%kmv, vc))
      x(1:nv) = -w%res(1:nv)
      x(nv + 1:) = -matmul(w%res(nv + 1:nv + m), u1)
      call lu_factor_solve(kk, ipiv, x, info)
      if (info /= 0) return
      w%dz = 0                                             ! (mu stays 0)
      w%dz(1:nv) = matmul(vc, x(1:nc))
      w%dz(nv + 1:nv + m) = x(nc + 1:)
      w%z = w%z + w%dz
    end associate
  end subroutine

  !> Vdot and lam at the start from the index-3 system (rigid_consistent_acc); a_0 = Vdot_0.
  subroutine lga_init(self, s, info)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    if (.not. self%options_fit(nstats=NSTATS_LIE_GENALPHA, niopt=NIOPT_LIE_GENALPHA, nropt=NROPT_LIE_GENALPHA, &
                               info=info)) return
    self%variant = self%iopt(IOPT_LIE_GENALPHA_VARIANT); self%maxit = self%iopt(IOPT_LIE_GENALPHA_MAXIT)
    self%tol = self%ropt(ROPT_LIE_GENALPHA_TOL)
    if (self%variant /= LGA_INDEX3 .and. self%variant /= LGA_STAB2) return
    if (self%ropt(ROPT_LIE_GENALPHA_RHO_INF) < 0 .or. self%ropt(ROPT_LIE_GENALPHA_RHO_INF) > 1) return
    self%naux = self%sys%nv + self%sys%mall          ! mu of every row (zero on a dropped one)
    self%p = alpha_params(self%ropt(ROPT_LIE_GENALPHA_RHO_INF))
    call self%lie_start(s, info)                      ! first: it may keep fewer rows (sys%m)
    if (info /= 0) return
    info = STATUS_BAD_INPUT
    if (self%adaptive) then
      ! variable steps (docs/adaptive_steps.md 8): the stabilized variant only (1.6)
      if (self%variant /= LGA_STAB2) return
      self%est_power = 3
      self%order = 2
      call alpha_error_constants(self%p, self%cq, self%cv)
      allocate(self%a_start(self%sys%nv))
      self%a_start = 0
      self%off = 0
      self%has_start = .false.
    end if
    associate (nv => self%sys%nv, m => self%sys%m, w => self%w)
      call lie_work_init(w, self%sys, nv + m + merge(m, 0, self%variant == LGA_STAB2))   ! (W, lam[, mu])
      allocate(self%b0(m, nv), self%b1(m, nv), self%psi0(nv), self%v1(nv), self%a1(nv))
      self%b0 = 0; self%b1 = 0; self%v1 = 0
      ! the Newton matrix: dense, or structured ([, y]: ga_assemble records its pattern)
      if (lie_structure_record(w, self%sys, self%iopt(IOPT_LIE_GENALPHA_LINEAR_SOLVER), &
                               merge(nv, 0, self%variant == LGA_STAB2))) then
        call ga_assemble(self, self%h, w%z(nv + 1:nv + m))
        call lie_structure_setup(w, self%iopt(IOPT_LIE_GENALPHA_LINEAR_SOLVER), info)
        if (info /= 0) return
        info = STATUS_BAD_INPUT
      end if
      self%stats(STAT_LIE_GENALPHA_LINEAR_SOLVER) = w%solver
      if (self%adaptive .and. w%structured .and. m > 0) then
        ! the estimates' projections (lga_project): the pattern of both, the Newton matrix's solver
        call self%pm%record(nv + m)
        call lie_add_mass(self%pm, self%sys, 0, 0, 1.0_wp)
        call lie_add_vm(w%blk, self%pm, self%b0, 0, nv, 1.0_wp)
        call lie_add_mv(w%blk, self%pm, self%b1, nv, 0, 1.0_wp, .false.)
        call self%pm%setup(w%solver, info)
        if (info /= 0 .or. self%pm%out_of_pattern) then
          info = STATUS_BAD_INPUT
          return
        end if
        info = STATUS_BAD_INPUT
      end if
    end associate
    allocate(self%mu(self%sys%m))
    info = 0
    self%aalg = s%a
    self%mu = 0
  end subroutine

  !> One step (at a crossing, retaken with mu = 0: below); with variable steps (self%adaptive) the shift of a_n to the offset the step needs
  !> (docs/adaptive_steps.md eq. (4)), the offset's recursion (eq. (3)) and the local error
  !> estimates (section 8) into err_q, err_v.
  subroutine lga_step(self, h, t1, s, info)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    integer :: nv, m
    real(wp) :: t0, off0, v0(self%sys%nv), w0(self%sys%nv), a0(self%sys%nv)
    nv = self%sys%nv; m = self%sys%m
    associate (sys => self%sys, w => self%w, p => self%p, x => self%x, r => self%r, a => self%aalg)
      if (self%adaptive) then
        t0 = self%el0; v0 = s%v; w0 = s%a   ! the offsets' times: elapsed since the run's t0
        off0 = self%off
        if (self%has_start .and. p%alpha * h /= self%off) then
          ! eq. (4): a_n* = a_n + (delta h - o_n) (a_n - a_{n-1}*) / (t_n + o_n - s_{n-1}*)
          a = a + (p%alpha * h - self%off) * (a - self%a_start) / (t0 + self%off - self%s_start)
          off0 = p%alpha * h
        end if
        a0 = a
      end if
      self%psi0 = h * s%v + h * h * (0.5_wp - p%beta) * a
      if (self%variant == LGA_STAB2) call rigid_bmat(sys, r, self%b0)
      w%z(1:nv) = s%a
      w%z(nv + 1:nv + m) = s%lam
      if (self%variant == LGA_STAB2) w%z(nv + m + 1:) = 0
      call self%newton(h, s%v, s%a, info)
      if (info == STATUS_NEWTON_FAILED .and. self%near_singular .and. self%variant == LGA_STAB2 &
          .and. .not. self%adaptive) then
        ! Next to a singular configuration (Newton failed, B near rank loss, no iterate passed
        ! lie_newton's backward test: the matrix holds B twice, B1 P' B0^T) the step is retaken
        ! with mu fixed at 0 (mu_fixed: the mu rows mu = 0, the B V rows dropped): (W, lam) then
        ! solve exactly the index-3 step, whose matrix holds B once and which lie_newton's pass
        ! carries next to crossings.  mu is the multiplier of the added velocity constraint (Gear,
        ! Gupta, Leimkuhler 1985), zero on the exact solution: IFToMM A02 in space, N = 40, at
        ! t = 8.58, |mu| 0.2 ... 0.5 on the steps around (beta h^2 |mu| <= 1.3e-7).  That one step
        ! is index-3 generalized-alpha, second order in q (Arnold, Bruls, Cardona 2015), with
        ! B(q_{n+1}) V_{n+1} not imposed (measured 1.5e-5 against 4e-15); the next stabilized
        ! step imposes it again (3e-15; |mu| 180 on that one step).  Variable steps keep the
        ! driver's step across (drive_adaptive): index 3 is not for step control
        ! (docs/adaptive_steps.md 1.6).
        call retake(.false.)
      end if
      if (info == STATUS_NEWTON_FAILED .and. self%near_singular .and. self%variant == LGA_STAB2 &
          .and. .not. self%adaptive) then
        ! The index-3 step failed next to a singular configuration too (IFToMM A02 in space, N = 40,
        ! from t = 0: the step ending at t = 8.584, sigma_min / sigma_max of B 4.2e-7; the momentum
        ! rows stall at 8.5e-8 ... 9.3e-7): retaken with B's near-null directions left out of the
        ! increments (ga_filtered), the step taken by its backward error (ga_floor).
        call retake(.true.)
      end if
      if (info /= 0) return
      call ga_kinematics(self, h, s%v, s%a)
      x = w%x1; r = w%r1; s%v = self%v1; a = self%a1
      s%a = w%z(1:nv)
      s%lam = w%z(nv + 1:nv + m)
      if (self%variant == LGA_STAB2) self%mu = w%z(nv + m + 1:)
      call lie_pack(x, r, s%q)
      if (self%adaptive) call lga_estimates(self, h, t0, self%el1, off0, a0, v0, w0, s, info)
    end associate

  contains

    !> The step again from its start with mu fixed at 0 (the index-3 step), filtered or not.
    subroutine retake(filtered)
      logical, intent(in) :: filtered
      self%w%z(1:nv) = s%a
      self%w%z(nv + 1:nv + m) = s%lam
      if (self%variant == LGA_STAB2) self%w%z(nv + m + 1:) = 0
      self%mu_fixed = self%variant == LGA_STAB2
      self%filtered = filtered
      call self%newton(h, s%v, s%a, info)
      self%mu_fixed = .false.
      self%filtered = .false.
    end subroutine

  end subroutine

  !> docs/adaptive_steps.md section 8: e_psi = h^3 C_q a[s_n, s_n+1] - h^3/12 [V, Vdot] (the mean
  !> of both ends), e_V = h^3 C_v 2 a[s_n-1, s_n, s_n+1] (none at step 1), projected (eq. (11):
  !> C = B(q_{n+1}), D = B(q_n)^T for psi, M^-1 B^T for V); err_q: e_psi's effect on the packed q.
  !> a0: a_n* (at s_n = t0 + off0), v0, w0: V_n, Vdot_n; s: the new state (self%aalg = a_{n+1}).
  subroutine lga_estimates(self, h, t0, t1, off0, a0, v0, w0, s, info)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t0, t1, off0, a0(:), v0(:), w0(:)
    type(state_t), intent(in) :: s
    integer, intent(out) :: info
    real(wp) :: off1, s_n, s_1, d1(self%sys%nv), epsi(self%sys%nv), y(self%sys%m)
    real(wp), allocatable :: cd(:, :), d(:, :), mlu(:, :)
    integer :: i, o, m, ipiv(self%sys%m), ipm(self%sys%nv)
    info = 0
    m = self%sys%m
    associate (p => self%p, a => self%aalg, b0 => self%b0, b1 => self%b1)
      off1 = (p%alpha * h - p%alpha_m * off0) / (1 - p%alpha_m)          ! eq. (3)
      s_n = t0 + off0
      s_1 = t1 + off1
      d1 = (a - a0) / (s_1 - s_n)
      epsi = h**3 * self%cq * d1                                           ! eq. (16)
      do i = 1, self%sys%nb
        o = 6 * i - 3
        epsi(o + 1:o + 3) = epsi(o + 1:o + 3) - h**3 / 24 * (cross(v0(o + 1:o + 3), w0(o + 1:o + 3)) &
                                                             + cross(s%v(o + 1:o + 3), s%a(o + 1:o + 3)))
      end do
      self%has_err_v = self%has_start
      if (self%has_start) &                                                ! eq. (17)
        self%err_v = h**3 * self%cv * 2 * (d1 - (a0 - self%a_start) / (s_n - self%s_start)) / (s_1 - self%s_start)
      if (m > 0 .and. self%w%structured) then                              ! eq. (11)
        call rigid_bmat(self%sys, self%r, b1)
        call lga_project(self, .false., epsi, info)
        if (info == 0 .and. self%has_err_v) call lga_project(self, .true., self%err_v, info)
        if (info /= 0) return
      else if (m > 0) then
        allocate(cd(m, m), d(self%sys%nv, m), mlu(self%sys%nv, self%sys%nv))
        call rigid_bmat(self%sys, self%r, b1)
        d = transpose(b0)
        cd = matmul(b1, d)
        call lu_factor(cd, ipiv, info)
        if (info /= 0) then
          info = STATUS_SINGULAR
          return
        end if
        y = matmul(b1, epsi)
        call lu_solve(cd, ipiv, y)
        epsi = epsi - matmul(d, y)
        if (self%has_err_v) then
          mlu = self%w%mm
          call lu_factor(mlu, ipm, info)
          if (info == 0) then
            d = transpose(b1)
            do i = 1, m
              call lu_solve(mlu, ipm, d(:, i))
            end do
            cd = matmul(b1, d)
            call lu_factor(cd, ipiv, info)
          end if
          if (info /= 0) then
            info = STATUS_SINGULAR
            return
          end if
          y = matmul(b1, self%err_v)
          call lu_solve(cd, ipiv, y)
          self%err_v = self%err_v - matmul(d, y)
        end if
      end if
      do i = 1, self%sys%nb                                                ! dx = e_x, dR = R hat(e_th)
        o = 12 * (i - 1)
        self%err_q(o + 1:o + 3) = epsi(6 * i - 5:6 * i - 3)
        self%err_q(o + 4:o + 12) = reshape(transpose(matmul(self%r(:, :, i), hat(epsi(6 * i - 2:6 * i)))), [9])
      end do
      self%a_start = a0
      self%s_start = s_n
      self%has_start = .true.
      self%off = off1
    end associate
  end subroutine

  !> Eq. (11) of docs/adaptive_steps.md, e <- e - D (C D)^-1 C e, C = B1 = B(q_{n+1}) (self%b1), as
  !> the saddle-point system [P D'; C 0] [u; y] = [P e; 0] (u = the projected e) on the joints'
  !> blocks (self%pm): for psi (mass false) P = I, D' = D = B0^T; for V (mass true) P = M, D' = B1^T
  !> (D = M^-1 B1^T).  info: STATUS_SINGULAR when C D is.
  subroutine lga_project(self, mass, e, info)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    logical, intent(in) :: mass
    real(wp), intent(inout) :: e(:)
    integer, intent(out) :: info
    real(wp) :: rhs(self%sys%nv + self%sys%m)
    integer :: nv
    nv = self%sys%nv
    associate (pm => self%pm, w => self%w)
      call pm%zero()
      if (mass) then
        call lie_add_mass(pm, self%sys, 0, 0, 1.0_wp)
        call lie_add_vm(w%blk, pm, self%b1, 0, nv, 1.0_wp)
        rhs(1:nv) = lie_mass_times(self%sys, e)
      else
        call lie_add_identity(pm, 0, nv, 1.0_wp)
        call lie_add_vm(w%blk, pm, self%b0, 0, nv, 1.0_wp)
        rhs(1:nv) = e
      end if
      call lie_add_mv(w%blk, pm, self%b1, nv, 0, 1.0_wp, .false.)
      call pm%factor(info)
      if (info /= 0) then
        info = STATUS_SINGULAR
        return
      end if
      rhs(nv + 1:) = 0
      call pm%solve(rhs)
      e = rhs(1:nv)
    end associate
  end subroutine

  !> The driver's save / restore of the variable-step state (slot 1: before the step tried,
  !> 2: the start).
  subroutine lga_save(self, slot)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    integer, intent(in) :: slot
    associate (sv => self%slots(slot))
      sv%off = self%off; sv%s_start = self%s_start; sv%has_start = self%has_start
      sv%a_start = self%a_start; sv%aalg = self%aalg; sv%mu = self%mu
      sv%x = self%x; sv%r = self%r; sv%nc = self%w%nc
    end associate
  end subroutine

  subroutine lga_restore(self, slot)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    integer, intent(in) :: slot
    associate (sv => self%slots(slot))
      self%off = sv%off; self%s_start = sv%s_start; self%has_start = sv%has_start
      self%a_start = sv%a_start; self%aalg = sv%aalg; self%mu = sv%mu
      self%x = sv%x; self%r = sv%r; self%w%nc = sv%nc
    end associate
  end subroutine

  !> The end of a run: the C memory of the Newton matrix and the projections' matrix freed.
  subroutine lga_finish(self)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    call self%w%jm%release()
    call self%pm%release()
  end subroutine

  !> (a, mu) per sample.
  subroutine lga_aux(self, s, aux)
    class(lie_genalpha_stepper_t), intent(inout) :: self
    type(state_t), intent(in) :: s
    real(wp), intent(out) :: aux(:)
    aux = 0
    aux(1:self%sys%nv) = self%aalg
    if (allocated(self%rows)) then              ! a redundant system: mu of the kept rows
      aux(self%sys%nv + self%rows) = self%mu
    else
      aux(self%sys%nv + 1:) = self%mu
    end if
  end subroutine

end module lie_genalpha
